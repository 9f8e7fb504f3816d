import { existsSync } from 'node:fs';
import { maskDatabaseUrl, type LoadedConfig } from '../config/index.js';
import { SHARED_SCOPE } from '../memory/index.js';
import { MIGRATIONS, openDatabase } from '../store/index.js';
import { embedsMemory, memorySettings } from '../runtime/settings.js';
import type { DoctorCheck } from './doctor.js';
import { counted } from './plural.js';

/**
 * The doctor's team lines: members and the shared scope (only once there is a team: a personal
 * install sees no new line), and the team store when a store URL is configured.
 */

/** Members, the shared scope, and whether the owner can still get in (the team store's: checkTeamStore). */
export function checkTeamMembers(config: LoadedConfig, checks: DoctorCheck[]): void {
  const path = config.paths.database;
  if (config.values['store.url'] || !existsSync(path)) return;
  let members: string[];
  let shared: number;
  try {
    const db = openDatabase(path, { readonly: true });
    try {
      const has = (table: string) =>
        db.prepare<[string], { n: number }>("SELECT count(*) AS n FROM sqlite_master WHERE type = 'table' AND name = ?").get(table)!.n > 0;
      members = has('team_members')
        ? db
            .prepare<[], { name: string }>('SELECT name FROM team_members ORDER BY name')
            .all()
            .map((row) => row.name)
        : [];
      shared = db.prepare<[string], { n: number }>("SELECT count(*) AS n FROM memory_units WHERE scope = ? AND status = 'active'").get(SHARED_SCOPE)!.n;
    } finally {
      db.close();
    }
  } catch {
    return; // the database check says why it cannot be read
  }
  membersCheck(config, members, shared, checks);
}

function membersCheck(config: LoadedConfig, members: readonly string[], shared: number, checks: DoctorCheck[]): void {
  if (members.length === 0 && shared === 0) return;
  const named = members.length > 5 ? `${members.slice(0, 5).join(', ')} and ${members.length - 5} more` : members.join(', ');
  const detail = `${counted(members.length, 'member')}${members.length > 0 ? ` (${named})` : ''}; shared scope "${SHARED_SCOPE}": ${counted(shared, 'memory', 'memories')}`;
  // (A node of a team store does not start at all without it: checkTeamStore fails.)
  if (members.length > 0 && !config.values['proxy.api_key'] && !config.values['store.url'])
    checks.push({
      name: 'team',
      verdict: 'warn',
      detail: `${detail}; proxy.api_key is not set, so only member keys are accepted and the owner's own agent is refused`,
      fix: 'set an owner key: `metaclaw config set proxy.api_key <a long random key>`',
    });
  else checks.push({ name: 'team', verdict: 'pass', detail });
}

/** The team store named by store.url (or METACLAW_DATABASE_URL): reachable, its schema, and what this version does with it. */
export async function checkTeamStore(config: LoadedConfig, checks: DoctorCheck[]): Promise<void> {
  const url = config.values['store.url'];
  if (!url) return;
  const postgres = await import('../store/postgres/index.js');
  const pool = postgres.openPool(url);
  const latest = MIGRATIONS.at(-1)?.version ?? 0;
  const serving = '`metaclaw start` serves from it (skills, memory recall, turns, and learning from the team queue on every node)';
  try {
    const status = await postgres.readPostgresStatus(pool);
    // Said plainly: whether memory vectors are in use, or why recall is keyword-only (pgvector missing, or no embeddings here).
    const vector = await postgres.readVectorSupport(pool);
    const here =
      vector.state === 'installed' && !embedsMemory(memorySettings(config))
        ? ' (this config sets no memory.embedding, so a node started with it recalls by keyword)'
        : '';
    const where = `${maskDatabaseUrl(url)}: reachable, schema version ${status.schemaVersion} of ${latest}, ${vector.notice}${here}`;
    if (status.schemaVersion < latest)
      checks.push({
        name: 'team store',
        verdict: 'fail',
        detail: `${where}; \`metaclaw start\` refuses a schema older than this build`,
        fix: 'run `metaclaw store migrate`',
      });
    else if (status.schemaVersion > latest)
      checks.push({ name: 'team store', verdict: 'fail', detail: `${where}: newer than this MetaClaw`, fix: 'upgrade MetaClaw-TS on this node' });
    else {
      // The members the nodes admit are the team store's, not the install's own database's.
      const [members, shared] = await Promise.all([
        pool.query<{ name: string }>('SELECT name FROM team_members ORDER BY name'),
        pool.query<{ n: string }>("SELECT count(*) AS n FROM memory_units WHERE scope = $1 AND status = 'active'", [SHARED_SCOPE]),
      ]);
      checks.push({ name: 'team store', verdict: 'pass', detail: `${where}; ${serving}` });
      if (config.values['proxy.api_key'] === '')
        checks.push({
          name: 'proxy key',
          verdict: 'fail',
          detail: 'proxy.api_key is not set, and a node of a team store does not start without it (the owner and the management routes use it)',
          fix: 'set an owner key: METACLAW_PROXY_API_KEY, or `metaclaw config set proxy.api_key <a long random key>`',
        });
      membersCheck(
        config,
        members.rows.map((row) => row.name),
        Number(shared.rows[0]!.n),
        checks,
      );
    }
  } catch (error) {
    checks.push({
      name: 'team store',
      verdict: 'fail',
      detail: postgres.describeStoreError(error, url),
      fix: 'check that PostgreSQL runs and store.url (host, port, user, password, database) is right',
    });
  } finally {
    await pool.end().catch(() => undefined);
  }
}
