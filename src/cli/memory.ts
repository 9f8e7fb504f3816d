import { existsSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import { progress } from '@clack/prompts';
import type { Command } from 'commander';
import { maskDatabaseUrl, PRIVATE_FILE_MODE, type LoadedConfig } from '../config/index.js';
import { ConversationStore, MAX_SESSION_ID_LENGTH } from '../conversation/index.js';
import { JobQueue } from '../learning/index.js';
import { silentLogger } from '../logging/index.js';
import {
  DEFAULT_MEMORY_TYPE,
  personalMemoryApi,
  pythonImportLines,
  pythonImportReport,
  readPythonStore,
  sqliteFileKind,
  rememberPythonImport,
  ingestTurnSchema,
  isExpectedSkip,
  MEMORY_TYPES,
  memoryContentSchema,
  MemoryService,
  presentMemory,
  type IngestTurn,
  type MemoryApi,
  type MemoryImportReport,
  type MemoryType,
  type MemoryUnit,
} from '../memory/index.js';
import { SEARCH_EMBED_TIMEOUT_MS } from '../embeddings/index.js';
import { retrievalModes, storedProbe, withMemoryRetrieval } from '../runtime/retrieval-mode.js';
import { memorySettings } from '../runtime/settings.js';
import { writeFileAtomic } from '../shared/atomic-write.js';
import { SkillQuotes } from '../skills/index.js';
import { openDatabase, type Db } from '../store/index.js';
import { CliExit, errorText, loadCliConfig, numberArgument, print, printError, readUserFile } from './context.js';
import { onServedStore } from './store.js';
import { openTeamMemoryApi } from './team-memory.js';
import { terminalText } from './terminal-text.js';
import { counted } from './plural.js';

/** As the HTTP API takes it: a unit's importance is 0..1 (a 5 is refused there, not clamped). */
const IMPORTANCE = { min: 0, max: 1, integer: false };

/** Content as the HTTP API takes it (not blank, at most 4,000 characters), trimmed. */
function checkedContent(text: string, what: string): string {
  const parsed = memoryContentSchema.safeParse(text);
  if (parsed.success) return parsed.data;
  throw new CliExit(`${what}: ${text.trim() === '' ? 'must not be empty' : `at most 4,000 characters (this is ${text.trim().length})`}.`);
}

export interface MemoryOptions {
  config?: string;
  json?: boolean;
  scope?: string;
}

/** The memory service on `db` (the install's database), as the proxy builds it, for commands a person waits on; its jobs go to db's queue. */
export function personalMemory(config: LoadedConfig, db: Db): MemoryService {
  // Searched as the proxy searches: the retrieval its last start decided (the stored probe of the provider; no probe here).
  const settings = withMemoryRetrieval(memorySettings(config), retrievalModes(config, process.env, storedProbe(db)).memory);
  const memory = new MemoryService({
    db,
    logger: silentLogger(),
    settings,
    conversation: new ConversationStore(db),
    quotes: new SkillQuotes(db, config.paths.skillsDir),
    waitedSearch: { embedTimeoutMs: SEARCH_EMBED_TIMEOUT_MS, keywordsOnly: (why) => printError(`Searched by keywords only: ${why}.`) },
  });
  const queue = new JobQueue(db, `cli-${process.pid}`, config.values['learning.max_attempts']);
  memory.attachQueue((kind, payload, enqueueOptions) => queue.enqueue(kind, payload, enqueueOptions));
  return memory;
}

/**
 * Where `metaclaw memory` works: the store the proxy serves from. That is the team store when
 * store.url (or METACLAW_DATABASE_URL) is set, where every node reads (and a change reaches them at
 * once), else the install's own database.
 */
interface MemoryTarget {
  api: MemoryApi;
  defaultScope: string;
  /** The install's own database file; undefined on a team store. */
  databasePath?: string;
  /** The team store's address, password masked; undefined on the install's own database. */
  teamUrl?: string;
  /** Rows of each of `memory stats`' tables, in the store served from. */
  tables: () => Promise<Array<{ table: string; rows: number }>>;
  /** Notes in this install's database that MetaClaw's store with this fingerprint was imported (`doctor` reads it there). */
  rememberPythonImport: (fingerprint: string, path: string, report: MemoryImportReport) => void;
  /** Where a forgotten memory is gone from, for the user. */
  place: string;
}

/** The tables whose rows `memory stats` counts. */
const STATS_TABLES = ['sessions', 'turns', 'turn_payloads', 'payload_segments', 'jobs', 'memory_units', 'skill_usage', 'skill_versions', 'turn_outcomes'];

async function withTarget(options: MemoryOptions, action: (target: MemoryTarget) => void | Promise<void>): Promise<void> {
  const config = loadCliConfig(options.config ? { config: options.config } : {});
  const defaultScope = config.values['memory.scope'];
  return onServedStore(config, {
    team: async (postgres, pool, url) => {
      const api = await openTeamMemoryApi(postgres, pool, config);
      try {
        await action({
          api,
          defaultScope,
          teamUrl: maskDatabaseUrl(url),
          tables: async () => {
            const counts = (await postgres.readPostgresStatus(pool)).tables;
            return STATS_TABLES.map((table) => ({ table, rows: counts[table] ?? 0 }));
          },
          rememberPythonImport: (fingerprint, path, report) => {
            const db = openDatabase(config.paths.database);
            try {
              rememberPythonImport(db, fingerprint, path, report);
            } finally {
              db.close();
            }
          },
          place: 'the team store',
        });
      } finally {
        api.close();
      }
    },
    personal: async (db) => {
      await action({
        api: personalMemoryApi(personalMemory(config, db)),
        defaultScope,
        databasePath: config.paths.database,
        tables: async () =>
          STATS_TABLES.map((table) => ({ table, rows: (db.prepare(`SELECT COUNT(*) AS count FROM ${table}`).get() as { count: number }).count })),
        rememberPythonImport: (fingerprint, path, report) => rememberPythonImport(db, fingerprint, path, report),
        place: 'the database file',
      });
    },
  });
}

function withMemory<T extends MemoryOptions>(action: (target: MemoryTarget, options: T) => void | Promise<void>): (options: T) => Promise<void> {
  return async (options) => {
    // As over HTTP (and as memory.scope): a scope has a name; "" stored units no route could reach.
    if (options.scope !== undefined && options.scope.trim() === '') throw new CliExit('--scope: must name a scope (it is empty).');
    // As over HTTP: a scope no header or body could name would be stored where no route reaches it.
    if (options.scope !== undefined && options.scope.length > MAX_SESSION_ID_LENGTH)
      throw new CliExit(`--scope: is ${options.scope.length} characters long; MetaClaw accepts at most ${MAX_SESSION_ID_LENGTH}.`);
    try {
      await withTarget(options, (target) => action(target, options));
    } catch (error) {
      if (error instanceof CliExit) throw error;
      throw new CliExit(errorText(error));
    }
  };
}

/**
 * The unit with this id, for show, edit, pin, unpin and forget. Without --scope the id reaches any
 * scope (the CLI is the owner's, on the store itself); with it, the unit must be in that scope, as
 * every other memory command keeps to the scope it is given: `--scope user:bob` on alice's unit is a
 * mistake to report, not a change to make in her scope. Another scope's unit is named, since whoever
 * runs the CLI can read every scope anyway.
 */
async function unitIn(api: MemoryApi, id: string, scope: string | undefined): Promise<MemoryUnit> {
  const unit = await api.get(id);
  if (scope !== undefined && unit && unit.scope !== scope)
    throw new CliExit(`No memory ${id} in scope "${scope}" (it is in scope "${unit.scope}"; leave out --scope, or give that one, to reach it).`);
  if (!unit) throw new CliExit(scope === undefined ? `No memory ${id}.` : `No memory ${id} in scope "${scope}".`);
  return unit;
}

/** `metaclaw memory …`: search, inspect, correct and truly forget what the agent remembers. */
export function registerMemoryCommands(program: Command): void {
  const memory = program.command('memory').description('long-term memory: search, add, edit, forget, stats, export, import');
  const common = (command: Command) =>
    command
      .option('-c, --config <path>', 'config file')
      .option('--json', 'machine-readable output')
      .option('-s, --scope <scope>', 'memory scope (default: memory.scope)');

  common(
    memory
      .command('search')
      .description('find memories')
      .argument('<query>')
      .option('--limit <n>', 'how many', '10')
      .option('--type <types>', 'only these types (comma-separated)')
      .option('--all', 'include superseded units'),
  ).action((query: string, options: MemoryOptions & { limit: string; type?: string; all?: boolean }) =>
    withMemory<MemoryOptions>(async ({ api, defaultScope }) => {
      // As the search route and MCP's memory_search refuse it: an empty query finds nothing by design.
      if (query.trim() === '') throw new CliExit('QUERY: must not be empty.');
      const types = options.type ? options.type.split(',').map((type) => memoryType(type.trim())) : undefined;
      const hits = await api.search({
        scope: options.scope ?? defaultScope,
        query,
        limit: numberArgument(options.limit, '--limit', { min: 1, max: 100 }),
        ...(types ? { types } : {}),
        includeSuperseded: options.all ?? false,
      });
      if (options.json)
        return print(
          JSON.stringify(
            hits.map((hit) => ({ ...presentMemory(hit.unit), score: hit.score })),
            null,
            2,
          ),
        );
      if (hits.length === 0) return print('Nothing found.');
      for (const hit of hits) print(line(hit.unit, hit.score));
    })(options),
  );

  common(
    memory
      .command('add')
      .description('remember something by hand')
      .argument('<content>')
      .option('--type <type>', MEMORY_TYPES.join(' | '), DEFAULT_MEMORY_TYPE)
      .option('--core', 'a standing instruction, injected on every main turn')
      .option('--pin', 'keep it first and never decay it')
      .option('--importance <value>', '0..1', '0.8'),
  ).action((content: string, options: MemoryOptions & { type: string; core?: boolean; pin?: boolean; importance: string }) =>
    withMemory<MemoryOptions>(async ({ api, defaultScope }) => {
      const unit = await api.add({
        scope: options.scope ?? defaultScope,
        type: memoryType(options.type),
        content: checkedContent(content, 'content'),
        importance: numberArgument(options.importance, '--importance', IMPORTANCE),
        confidence: 1,
        core: options.core ?? false,
        pinned: options.pin ?? false,
        origin: 'manual',
      });
      if (options.json) return print(JSON.stringify(presentMemory(unit), null, 2));
      print(`Remembered ${unit.id}${unit.flagged ? ` (flagged: ${unit.flagged}; it will not be injected)` : ''}.`);
    })(options),
  );

  common(memory.command('show').description('one memory').argument('<id>')).action((id: string, options: MemoryOptions) =>
    withMemory<MemoryOptions>(async ({ api }) => {
      const unit = await unitIn(api, id, options.scope);
      if (options.json) return print(JSON.stringify(presentMemory(unit), null, 2));
      // Lists cut each unit to one line; here the user asked for this one, so all of it.
      print(line(unit, undefined, { content: false }));
      for (const text of unit.content.split('\n')) print(`  ${text}`);
      print(
        `  scope ${unit.scope}, origin ${unit.origin}, importance ${unit.importance.toFixed(2)}, confidence ${unit.confidence.toFixed(2)}, recalled ${counted(unit.accessCount, 'time')}`,
      );
      if (unit.sourceSession) print(`  from session ${unit.sourceSession}${unit.sourceTurns.length > 0 ? `, turns ${unit.sourceTurns.join(', ')}` : ''}`);
      if (unit.supersededBy) print(`  superseded by ${unit.supersededBy}`);
      if (unit.flagged) print(`  FLAGGED: ${unit.flagged} (never injected)`);
    })(options),
  );

  common(
    memory
      .command('edit')
      .description('correct a memory')
      .argument('<id>')
      .option('--content <text>', 'the new text')
      .option('--type <type>', MEMORY_TYPES.join(' | '))
      .option('--importance <value>', '0..1')
      .option('--core', 'make it a standing instruction')
      .option('--no-core', 'no longer a standing instruction')
      .option('--pin', 'keep it first in its block and out of decay')
      .option('--unpin', 'unpin it'),
  ).action((id: string, options: MemoryOptions & { content?: string; type?: string; importance?: string; core?: boolean; pin?: boolean; unpin?: boolean }) =>
    withMemory<MemoryOptions>(async ({ api }) => {
      if (options.pin && options.unpin) throw new CliExit('--pin or --unpin, not both.');
      const changes = [options.content, options.type, options.importance, options.core, options.pin, options.unpin];
      // As PATCH /v1/memory/{id}: an edit that names no change is a mistake to report, not "Updated".
      if (changes.every((change) => change === undefined))
        throw new CliExit('nothing to change: give --content, --type, --importance, --core / --no-core, --pin or --unpin.');
      await unitIn(api, id, options.scope);
      const updated = await api.update(id, {
        ...(options.content !== undefined ? { content: checkedContent(options.content, '--content') } : {}),
        ...(options.type !== undefined ? { type: memoryType(options.type) } : {}),
        ...(options.importance !== undefined ? { importance: numberArgument(options.importance, '--importance', IMPORTANCE) } : {}),
        ...(options.core !== undefined ? { core: options.core } : {}),
        ...(options.pin ? { pinned: true } : {}),
        ...(options.unpin ? { pinned: false } : {}),
      });
      if (!updated) throw new CliExit(`No memory ${id}.`);
      print(options.json ? JSON.stringify(presentMemory(updated), null, 2) : `Updated: ${line(updated)}`);
    })(options),
  );

  for (const [name, pinned] of [
    ['pin', true],
    ['unpin', false],
  ] as const) {
    common(
      memory
        .command(name)
        .description(pinned ? 'keep a memory first in its block and out of decay' : 'unpin a memory')
        .argument('<id>'),
    ).action((id: string, options: MemoryOptions) =>
      withMemory<MemoryOptions>(async ({ api }) => {
        await unitIn(api, id, options.scope);
        const updated = await api.update(id, { pinned });
        if (!updated) throw new CliExit(`No memory ${id}.`);
        print(`${pinned ? 'Pinned' : 'Unpinned'} ${id}.`);
      })(options),
    );
  }

  common(memory.command('core').description("the scope's standing instructions, as injected on every main turn")).action(
    withMemory<MemoryOptions>(async ({ api, defaultScope }, options) => {
      const units = await api.core(options.scope ?? defaultScope);
      if (options.json) return print(JSON.stringify(units.map(presentMemory), null, 2));
      if (units.length === 0) return print('No standing instructions.');
      for (const unit of units) print(line(unit));
    }),
  );

  common(memory.command('forget').description('delete a memory for good (also from the turns it came from or was injected into)').argument('<id>')).action(
    (id: string, options: MemoryOptions) =>
      withMemory<MemoryOptions>(async ({ api, place }) => {
        await unitIn(api, id, options.scope);
        const removed = await api.forget(id);
        if (!removed) throw new CliExit(`No memory ${id}.`);
        print(`Forgot ${id}: "${removed.content.slice(0, 80)}". It is gone from ${place}.`);
      })(options),
  );

  common(memory.command('forget-scope').description('delete every memory of a scope').argument('<scope>').option('--yes', 'do not ask')).action(
    (scope: string, options: MemoryOptions & { yes?: boolean }) =>
      withMemory<MemoryOptions>(async ({ api }) => {
        if (!options.yes) throw new CliExit(`This deletes every memory in scope "${scope}". Re-run with --yes to confirm.`);
        const forgotten = await api.forgetScope(scope);
        print(`Forgot ${forgotten} memor${forgotten === 1 ? 'y' : 'ies'} of scope ${scope}.`);
      })(options),
  );

  common(memory.command('stats').description('units per scope and type, and the size of every table and log')).action(
    withMemory<MemoryOptions>(async ({ api, databasePath, teamUrl, tables: tableRows }, options) => {
      const stats = options.scope ? [await api.stats(options.scope)] : (await api.allStats()).scopes;
      const tables = await tableRows();
      const files = databasePath ? [databasePath, `${databasePath}-wal`].map((path) => ({ path, bytes: existsSync(path) ? statSync(path).size : 0 })) : [];
      if (options.json) return print(JSON.stringify({ scopes: stats, tables, ...(teamUrl ? { store: teamUrl } : { files }) }, null, 2));
      for (const scope of stats) {
        print(`scope ${scope.scope}: ${scope.active} active (${counted(scope.core, 'standing instruction')}), ${scope.superseded} superseded`);
        print(`  by type: ${countsLine(scope.by_type)}`);
        print(`  by origin: ${countsLine(scope.by_origin)}`);
      }
      if (stats.length === 0) print('No memories yet.');
      print('');
      print(`tables: ${tables.map((table) => `${table.table} ${table.rows}`).join(', ')}`);
      if (teamUrl) print(`store: ${teamUrl} (the team store, PostgreSQL)`);
      else print(`files: ${files.map((file) => `${file.path} ${(file.bytes / 1024).toFixed(0)} KiB`).join(', ')}`);
    }),
  );

  common(memory.command('export').description('write memories as JSONL (stdout, or --output FILE)').option('-o, --output <file>')).action(
    withMemory<MemoryOptions & { output?: string }>(async ({ api }, options) => {
      const text = await api.export(options.scope);
      if (options.output) {
        const count = text === '' ? 0 : text.split('\n').length - 1;
        // A new file, renamed over the old one: its mode is 0600 whatever the file it replaces had.
        writeFileAtomic(options.output, text, { mode: PRIVATE_FILE_MODE });
        print(`Exported ${counted(count, 'memory', 'memories')} to ${options.output}.`);
      } else process.stdout.write(terminalText(text));
    }),
  );

  common(
    memory.command('import').description("read memories from a JSONL file (what export writes) or from the Python MetaClaw's memory.db").argument('<file>'),
  ).action((file: string, options: MemoryOptions) =>
    withMemory<MemoryOptions>(async (target) => {
      const scope = options.scope ?? target.defaultScope;
      const kind = sqliteFileKind(file);
      // Read as JSONL, the log's pages were reported line by line as 'not JSON', and the command succeeded.
      if (kind === 'wal')
        throw new CliExit(
          `${file} is a SQLite write-ahead log, not a database: import the database file beside it${file.endsWith('-wal') ? ` (${file.slice(0, -'-wal'.length)})` : ''}, which is read with its log; nothing was imported.`,
        );
      if (kind === 'database') return importPythonStore(target, file, scope, options.json === true);
      const lines = readUserFile(file).split('\n');
      const report = await withProgress(lines.length, 'lines', async (start, end) => {
        const chunk = await target.api.import(lines.slice(start, end), scope);
        return { imported: chunk.imported, skipped: chunk.skipped.map((item) => ({ line: item.line + start, reason: item.reason })) };
      });
      if (options.json) print(JSON.stringify(report, null, 2));
      else {
        print(`Imported ${report.imported} memor${report.imported === 1 ? 'y' : 'ies'}; skipped ${report.skipped.length}.`);
        for (const skipped of report.skipped.slice(0, 20)) print(`  line ${skipped.line}: ${skipped.reason}`);
        if (report.skipped.length > 20) print(`  … and ${report.skipped.length - 20} more (--json lists them all)`);
      }
      const refusal = importRefusal(file, lines, report);
      if (refusal) throw new CliExit(refusal);
    })(options),
  );

  common(
    memory
      .command('ingest')
      .description('store a conversation (JSON or JSONL turns {role, content, timestamp?, id?}) and queue extraction')
      .argument('<file>')
      .option('--session <id>', 'session id (default: a new one, ingest-<time>)'),
  ).action((file: string, options: MemoryOptions & { session?: string }) =>
    withMemory<MemoryOptions>(async ({ api, defaultScope, teamUrl }) => {
      // Made when the command runs: a default given to commander would be the time `--help` ran.
      const session = options.session ?? `ingest-${Date.now()}`;
      if (session.trim() === '') throw new CliExit('--session: must not be empty.');
      if (session.length > MAX_SESSION_ID_LENGTH)
        throw new CliExit(`--session: is ${session.length} characters long; MetaClaw accepts at most ${MAX_SESSION_ID_LENGTH}.`);
      const turns = readTurns(file);
      if (turns.length === 0) throw new CliExit(`${file} holds no turns: nothing to store.`);
      const result = await api.ingest(options.scope ?? defaultScope, session, turns);
      if (options.json) return print(JSON.stringify(result, null, 2));
      print(
        `Stored ${counted(result.stored.length, 'turn')} of session ${session}${result.extraction_job ? `; extraction queued (job ${result.extraction_job}, runs in ${teamUrl ? 'a node of the team' : 'the proxy'})` : ''}.`,
      );
    })(options),
  );
}

/**
 * Why an import that brought nothing in is a failure, if it is: a file with no lines, or one whose
 * lines were all refused as unreadable. Lines skipped because they are here already (a backup
 * imported twice) or were replaced are what an import should skip, so those succeed.
 */
function importRefusal(file: string, lines: readonly string[], report: MemoryImportReport): string | undefined {
  if (report.imported > 0) return undefined;
  if (lines.every((line) => line.trim() === '')) return `${file} holds no memories: nothing was imported.`;
  const unreadable = report.skipped.filter((item) => !isExpectedSkip(item.reason));
  if (unreadable.length === 0) return undefined;
  return `nothing was imported: ${unreadable.length} of ${counted(report.skipped.length, 'line')} could not be read as memories (first, line ${unreadable[0]!.line}: ${unreadable[0]!.reason}).`;
}

/**
 * `memory import` of the Python MetaClaw's store: read from a private copy (the file is never
 * written), imported as JSONL lines are, and remembered in this install's database by what the
 * store holds, so `doctor` stops offering it.
 */
async function importPythonStore(target: MemoryTarget, file: string, scope: string, json: boolean): Promise<void> {
  const store = readPythonStore(file);
  const report = await withProgress(store.rows.length, 'memories', async (start, end) => {
    const converted = pythonImportLines(store.rows.slice(start, end), scope, start + 1);
    return pythonImportReport(converted, await target.api.import(converted.lines, scope));
  });
  target.rememberPythonImport(store.fingerprint, resolve(file), report);
  if (json) return print(JSON.stringify({ ...report, source: { path: resolve(file), schema_version: store.version } }, null, 2));
  print(
    `Imported ${report.imported} memor${report.imported === 1 ? 'y' : 'ies'} from MetaClaw's store ${file} (schema version ${store.version}); skipped ${report.skipped.length}.`,
  );
  for (const skipped of report.skipped.slice(0, 20)) print(`  row ${skipped.line} (${skipped.id}): ${skipped.reason}`);
  if (report.skipped.length > 20) print(`  … and ${report.skipped.length - 20} more (--json lists them all)`);
}

/** Runs an import a hundred items at a time, with a progress bar on a terminal when there are many. */
async function withProgress(count: number, what: string, slice: (start: number, end: number) => Promise<MemoryImportReport>): Promise<MemoryImportReport> {
  const bar = count > 200 && process.stderr.isTTY ? progress({ max: count, output: process.stderr }) : undefined;
  bar?.start(`Importing ${count} ${what}`);
  const report: MemoryImportReport = { imported: 0, skipped: [] };
  for (let start = 0; start < count; start += 100) {
    const chunk = await slice(start, Math.min(count, start + 100));
    report.imported += chunk.imported;
    report.skipped.push(...chunk.skipped);
    bar?.advance(Math.min(100, count - start));
  }
  bar?.stop(`Imported ${report.imported}`);
  return report;
}

function readTurns(file: string): IngestTurn[] {
  const text = readUserFile(file).trim();
  let values: unknown[];
  try {
    values = text.startsWith('[')
      ? (JSON.parse(text) as unknown[])
      : text
          .split('\n')
          .filter((item) => item.trim() !== '')
          .map((item) => JSON.parse(item) as unknown);
  } catch (error) {
    throw new CliExit(`${file} is neither a JSON array of turns nor JSONL (one turn a line): ${(error as Error).message}`);
  }
  // Each turn as POST /v1/memory/ingest checks it, speaker name included.
  return values.map((value, index) => {
    const parsed = ingestTurnSchema.safeParse(value);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      const where = issue && issue.path.length > 0 ? ` (${issue.path.join('.')}: ${issue.message})` : '';
      throw new CliExit(
        `${file}, turn ${index + 1}: expected {role: "user" | "assistant", content: string, name?: string, timestamp?: string | number, id?: string}${where}.`,
      );
    }
    const turn = parsed.data;
    return {
      role: turn.role,
      content: turn.content,
      ...(turn.name ? { name: turn.name } : {}),
      ...(turn.timestamp !== undefined ? { timestamp: turn.timestamp } : {}),
      ...(turn.id ? { id: turn.id } : {}),
    };
  });
}

/** One unit on one line, its content cut to 160 characters; `{ content: false }`: without the content. */
function line(unit: MemoryUnit, score?: number, options: { content?: boolean } = {}): string {
  const marks = [unit.core ? 'standing' : '', unit.pinned ? 'pinned' : '', unit.status === 'superseded' ? 'superseded' : '', unit.flagged ? 'flagged' : '']
    .filter(Boolean)
    .join(', ');
  const head = `${unit.id}  [${unit.type}${marks ? `; ${marks}` : ''}] ${new Date(unit.observedAt).toISOString().slice(0, 10)}`;
  if (options.content === false) return head;
  return `${head}  ${unit.content.replace(/\s+/g, ' ').slice(0, 160)}${score === undefined ? '' : `  (${score.toFixed(2)})`}`;
}

/** A count per kind on one line, "semantic 3, episodic 1", or "-" when there are none. */
function countsLine(counts: Record<string, number>): string {
  return (
    Object.entries(counts)
      .map(([kind, count]) => `${kind} ${count}`)
      .join(', ') || '-'
  );
}

/** A memory type typed on the command line, checked (add, edit, search --type). */
function memoryType(text: string): MemoryType {
  if (MEMORY_TYPES.includes(text as MemoryType)) return text as MemoryType;
  throw new CliExit(`Unknown type ${text}; use one of ${MEMORY_TYPES.join(', ')}.`);
}
