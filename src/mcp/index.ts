export { createMcpServer, type McpStores } from './server.js';
