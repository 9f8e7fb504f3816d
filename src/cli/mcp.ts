import { silentLogger } from '../logging/index.js';
import { personalMemoryApi } from '../memory/index.js';
import type { McpStores } from '../mcp/index.js';
import { skillsSettings } from '../runtime/settings.js';
import { SkillsService } from '../skills/index.js';
import { configuredMirrorRetrieval } from '../skills/mirror.js';
import { retrievalModes, skillsMode, storedProbe, teamSkillsRetrieval, withSkillsRetrieval } from '../runtime/retrieval-mode.js';
import { loadCliConfig, printError } from './context.js';
import { personalMemory } from './memory.js';
import { onServedStore } from './store.js';
import { openTeamMemoryApi } from './team-memory.js';

/** A skills search that could not use vectors says so on stderr (stdout is the protocol). */
const keywordsOnly = (why: string): void => printError(`metaclaw mcp: skills searched by keywords only: ${why}.`);

/**
 * `metaclaw mcp`: an MCP server on stdin/stdout over the store the proxy serves from: the personal
 * SQLite store and skill folder, or the team store when store.url (or METACLAW_DATABASE_URL) is set.
 * Standard output is the protocol: nothing else may print there (no logger writes; errors go to stderr).
 */
export async function mcpCommand(options: { config?: string }): Promise<void> {
  const config = loadCliConfig(options.config ? { config: options.config } : {});
  const defaultScope = config.values['memory.scope'];
  // The SDK (and what it pulls in) loads only for this command.
  const [{ StdioServerTransport }, mcp] = await Promise.all([import('@modelcontextprotocol/sdk/server/stdio.js'), import('../mcp/index.js')]);
  const serve = async (stores: McpStores): Promise<void> => {
    const server = mcp.createMcpServer(stores);
    const closed = new Promise<void>((resolve) => {
      server.server.onclose = () => resolve();
    });
    await server.connect(new StdioServerTransport());
    process.stdin.on('end', () => void server.close());
    await closed;
  };
  await onServedStore(config, {
    team: async (postgres, pool, url) => {
      // The library as a node holds it: loaded, then kept in step by the skills channel, so a skill
      // written on any node (or the search keys the team's job writes) reaches a connected client.
      const store = new postgres.PgSkillStore(pool);
      const followed = postgres.followTeamSkills(url, pool, store, { applicationName: 'metaclaw-mcp' });
      // Searched as a node with this config searches (embedded in memory as the mirror fills, when skills.embedding.* is set).
      const decided = teamSkillsRetrieval(config);
      const { retriever } = configuredMirrorRetrieval(
        followed.mirror,
        { ...skillsSettings(config), retrievalMode: skillsMode(decided) },
        decided.mode === 'keyword' ? undefined : decided.embedding,
        silentLogger(),
      );
      await followed.subscription.start();
      const memory = await openTeamMemoryApi(postgres, pool, config);
      try {
        await followed.subscription.catchUp();
        const skills = mcp.mirroredSkills(followed.mirror, retriever, async (name) => (await store.get(name))?.text, keywordsOnly);
        await serve({ memory, skills, defaultScope });
      } finally {
        memory.close();
        await followed.subscription.stop();
      }
    },
    personal: async (db) => {
      // Searched as the proxy searches: the retrieval its last start decided (the stored probe of the provider; no probe here).
      const skills = new SkillsService({
        db,
        logger: silentLogger(),
        settings: withSkillsRetrieval(skillsSettings(config), retrievalModes(config, process.env, storedProbe(db)).skills),
      });
      // The skill folder is watched: skills the proxy evolves (or you edit) show up without a restart.
      skills.open({ watch: true });
      try {
        await serve({ memory: personalMemoryApi(personalMemory(config, db)), skills: mcp.folderSkills(skills, keywordsOnly), defaultScope });
      } finally {
        skills.close();
      }
    },
  });
}
