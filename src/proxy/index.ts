export { createProxyServer } from './server.js';
export { ProxyAuth } from './auth.js';
export { AdminToken, ADMIN_HEADER } from './admin-token.js';
export { ProxyStats } from './stats.js';
export { AfterServing } from './after-serving.js';
export { newRequestId } from './model-request.js';
export type { ProxyDeps, ProxyApp } from './types.js';
export { skillsRoutes } from './skills-routes.js';
export { memoryRoutes, importLines, present as presentMemory } from './memory-routes.js';
