export { ProxyMetrics, type RequestObservation, type StoreFigures } from './proxy-metrics.js';
export { storeFigures, teamStoreFigures } from './store-figures.js';
