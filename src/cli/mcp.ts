import { maskDatabaseUrl } from '../config/index.js';
import { ConversationStore } from '../conversation/index.js';
import { silentLogger } from '../logging/index.js';
import { MemoryService } from '../memory/index.js';
import { memorySettings, skillsSettings } from '../runtime/settings.js';
import { SkillsService } from '../skills/index.js';
import { openDatabase } from '../store/index.js';
import { CliExit, loadCliConfig } from './context.js';

/**
 * `metaclaw mcp`: an MCP server on stdin/stdout over the same stores as the proxy. Standard output
 * is the protocol: nothing else may print there (no logger writes; errors go to stderr).
 */
export async function mcpCommand(options: { config?: string }): Promise<void> {
  const config = loadCliConfig(options.config ? { config: options.config } : {});
  // The tools work on the personal SQLite store only. On a team node the memories are in PostgreSQL:
  // serving (and creating) metaclaw.db here would answer from, and write to, a store no node reads.
  const teamStore = config.values['store.url'];
  if (teamStore)
    throw new CliExit(
      `metaclaw mcp serves the personal store ($METACLAW_HOME/metaclaw.db) only, and a team store is configured (${maskDatabaseUrl(teamStore)}, from store.url or METACLAW_DATABASE_URL): it would read and write memories that no team node sees. Use the team's proxy (its /v1/memory API) instead.`,
    );
  const db = openDatabase(config.paths.database);
  const skills = new SkillsService({ db, logger: silentLogger(), settings: { ...skillsSettings(config), embedding: { apiBase: '', apiKey: '', model: '' } } });
  // The skill folder is watched: skills the proxy evolves (or you edit) show up without a restart.
  skills.open({ watch: true });
  const memory = new MemoryService({
    db,
    logger: silentLogger(),
    settings: { ...memorySettings(config), embedding: { apiBase: '', apiKey: '', model: '' } },
    conversation: new ConversationStore(db),
  });
  // The SDK (and what it pulls in) loads only for this command.
  const [{ StdioServerTransport }, { createMcpServer }] = await Promise.all([import('@modelcontextprotocol/sdk/server/stdio.js'), import('../mcp/index.js')]);
  const server = createMcpServer({ memory, skills, defaultScope: config.values['memory.scope'] });
  const closed = new Promise<void>((resolve) => {
    server.server.onclose = () => resolve();
  });
  await server.connect(new StdioServerTransport());
  process.stdin.on('end', () => void server.close());
  await closed;
  skills.close();
  db.close();
}
