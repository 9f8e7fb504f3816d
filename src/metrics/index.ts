export { ProxyMetrics, type RequestObservation, type StoreFigures } from './proxy-metrics.js';
export { storeFigures } from './store-figures.js';
