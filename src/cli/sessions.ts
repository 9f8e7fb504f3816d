import { maskDatabaseUrl } from '../config/index.js';
import { ConversationStore, type SessionRow, type TurnRow } from '../conversation/index.js';
import type { ConversationReadStore } from '../store/ports.js';
import type { Awaitable } from '../types/index.js';
import { CliExit, loadCliConfig, numberArgument, print } from './context.js';
import { onServedStore } from './store.js';

export interface SessionsOptions {
  config?: string;
  json?: boolean;
  limit?: string;
}

/** What `metaclaw sessions` reads: ConversationStore and PgConversationReads answer alike. */
interface SessionReads extends Pick<ConversationReadStore, 'getSession' | 'turnsOfSession'> {
  listSessions(limit: number): Awaitable<SessionRow[]>;
}

/**
 * Runs `read` on the store the proxy records into: the team store when store.url (or
 * METACLAW_DATABASE_URL) is set, where every node writes its turns, else the install's own database.
 */
async function withSessions(options: SessionsOptions, read: (store: SessionReads, where: string) => Promise<void>): Promise<void> {
  const config = loadCliConfig(options.config ? { config: options.config } : {});
  return onServedStore(config, {
    team: (postgres, pool, url) => read(new postgres.PgConversationReads(pool), `the team store at ${maskDatabaseUrl(url)}`),
    personal: (db) => read(new ConversationStore(db), config.paths.database),
  });
}

/** `metaclaw sessions list`: the most recent sessions first. */
export async function sessionsListCommand(options: SessionsOptions): Promise<void> {
  const limit = numberArgument(options.limit ?? '20', '--limit', { min: 1 });
  await withSessions(options, async (store, where) => {
    const sessions = await store.listSessions(limit);
    if (options.json) {
      print(JSON.stringify(sessions, null, 2));
      return;
    }
    if (sessions.length === 0) {
      print(`No sessions recorded yet in ${where}.`);
      return;
    }
    // Ids are printed whole (the column widens for a long one): `sessions show` needs the id as listed.
    const width = Math.max(38, ...sessions.map((session) => session.id.length));
    print(`${'SESSION'.padEnd(width)} ${'LAST TURN'.padEnd(20)} TURNS  STATE`);
    for (const session of sessions) {
      print(
        `${session.id.padEnd(width)} ${time(session.last_turn_at).padEnd(20)} ${`${session.turn_count} (${session.main_turn_count} main)`.padEnd(6)} ${state(session)}`,
      );
    }
  });
}

/** `metaclaw sessions show ID`: the session and each of its turns. */
export async function sessionsShowCommand(id: string, options: SessionsOptions): Promise<void> {
  await withSessions(options, async (store, where) => {
    const session = await store.getSession(id);
    if (!session) throw new CliExit(`No session ${id} in ${where}. (metaclaw sessions list shows the recent ones.)`);
    const turns = await store.turnsOfSession(id);
    if (options.json) {
      print(JSON.stringify({ session, turns }, null, 2));
      return;
    }
    print(`Session ${session.id}`);
    print(`  identified by ${session.identity_source}, scope ${session.scope ?? 'default'}, ${session.client_format} client`);
    print(`  started ${time(session.started_at)}, last turn ${time(session.last_turn_at)}, ${state(session)}`);
    for (const turn of turns) printTurn(turn);
  });
}

function printTurn(turn: TurnRow): void {
  const tokens = turn.input_tokens === null ? '' : `, ${turn.input_tokens}+${turn.output_tokens} tokens`;
  print('');
  print(
    `  #${turn.seq} ${time(turn.started_at)} ${turn.turn_type} ${turn.id} → ${turn.upstream_name ?? '-'} ${turn.status ?? '-'} ${turn.outcome}${tokens}, ${Math.round(turn.duration_ms ?? 0)} ms`,
  );
  if (turn.query) print(`     user: ${oneLine(turn.query)}`);
  if (turn.response_text) print(`     assistant: ${oneLine(turn.response_text)}`);
  if (turn.tool_calls) print(`     tools: ${(JSON.parse(turn.tool_calls) as Array<{ name: string }>).map((call) => call.name).join(', ')}`);
  if (turn.error) print(`     error: ${oneLine(turn.error)}`);
}

function state(session: SessionRow): string {
  return session.ended_at === null ? 'open' : `ended (${session.end_reason})`;
}

function time(ms: number): string {
  return new Date(ms).toISOString().replace('T', ' ').slice(0, 19);
}

function oneLine(text: string, width = 160): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > width ? `${flat.slice(0, width - 1)}…` : flat;
}
