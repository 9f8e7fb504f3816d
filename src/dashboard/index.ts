export { dashboardRoutes } from './routes.js';
export { DashboardAssets } from './assets.js';
export type { DashboardSources, LatencySummary } from './types.js';
export { sqliteDashboardReads, type DashboardReads } from './reads.js';
