export { createMcpServer, type McpSkills, type McpStores } from './server.js';
export { folderSkills, mirroredSkills } from './skills.js';
