import type pg from 'pg';
import { z } from 'zod';
import type { UpstreamTarget } from '../../config/index.js';
import { LearningMisconfiguredError, resolveLearningTarget, type TeamJobHandler } from '../../learning/index.js';
import { indexTokens } from '../../memory/keyword-index.js';
import { askMemorySearchKeys, contentHash, pendingUnitKeys, UNITS_PER_JOB, UNITS_SCANNED } from '../../memory/search-keys.js';
import { SEARCH_KEYS_JOB, SEARCH_KEYS_LANGUAGES, type MemorySettings } from '../../memory/service.js';
import { withSearchKeyTerms } from '../../memory/store.js';
import { loadPrompt } from '../../prompts/index.js';
import type { CredentialMemory } from '../../upstream/index.js';
import type { PgConversationReads } from './conversation-reads.js';
import type { PgJobQueue } from './job-queue.js';
import type { IndexEntry, PgMemorySearch } from './memory-search.js';
import { sqliteRowOf } from './memory-units.js';
import { lockScope } from './memory-workspace.js';
import type { PgUserLanguages } from './team-languages.js';
import { fromPostgresText, toPostgresText } from './text.js';
import { DB_CLOCK_MS, setState } from './transaction.js';

export interface PgMemoryKeyJobDeps {
  pool: pg.Pool;
  queue: PgJobQueue;
  search: PgMemorySearch;
  languages: PgUserLanguages;
  settings: Pick<MemorySettings, 'extractor' | 'searchKeys'>;
  /** Where the model the team's agents last used is read (the default model of these calls, as on SQLite). */
  reads: Pick<PgConversationReads, 'latestModel'>;
  mainUpstream: UpstreamTarget | undefined;
  credentials: CredentialMemory | undefined;
}

const unitRows = z.array(z.object({ rowid: z.coerce.number(), id: z.string(), scope: z.string(), content: z.string(), search_keys: z.string() }));
const doneRows = z.array(z.object({ content_hash: z.string(), language: z.string(), prompt_version: z.coerce.number() }));
const keyRows = z.array(z.object({ content_hash: z.string(), keys: z.string() }));

/**
 * memory.search_keys on the team store: the personal install's job (MemoryService.writeSearchKeys:
 * same units, planning, prompt and validation) over the team store's units and the languages of
 * the team's requests. Its effect stores the keys by content hash (shared across scopes, as on
 * SQLite) and rewrites the keyword index entries of the units asked about with them, under each
 * scope's lock, from the rows as they are then (an edit meanwhile is indexed with what it holds).
 */
export function pgMemorySearchKeysHandler(deps: PgMemoryKeyJobDeps): TeamJobHandler {
  return {
    kind: SEARCH_KEYS_JOB,
    usesLlm: true,
    async run(_payload, context) {
      // Queued before memory.search_keys was turned off, or by an edit: nothing is written, nothing is covered.
      if (!deps.settings.searchKeys) return undefined;
      const seen = await deps.languages.refresh();
      const covered = (client: pg.PoolClient) => setState(client, SEARCH_KEYS_LANGUAGES, JSON.stringify(seen));
      if (seen.length === 0) return covered;
      const prompt = loadPrompt('memory-search-keys');
      const units = unitRows
        .parse(
          (
            await deps.pool.query(
              "SELECT rowid, id, scope, content, search_keys FROM memory_units WHERE status = 'active' AND origin <> 'raw_turn' ORDER BY rowid DESC LIMIT $1",
              [UNITS_SCANNED],
            )
          ).rows,
        )
        .map((unit) => ({ ...unit, content: fromPostgresText(unit.content), search_keys: fromPostgresText(unit.search_keys) }));
      const done = new Map<string, Map<string, number>>();
      const stored = await deps.pool.query('SELECT content_hash, language, prompt_version FROM memory_search_keys WHERE content_hash = ANY($1::text[])', [
        [...new Set(units.map((unit) => contentHash(unit.content)))],
      ]);
      for (const row of doneRows.parse(stored.rows))
        done.set(row.content_hash, (done.get(row.content_hash) ?? new Map<string, number>()).set(row.language, row.prompt_version));
      const pending = pendingUnitKeys(units, (hash) => done.get(hash) ?? new Map(), seen, prompt.version, UNITS_PER_JOB + 1);
      if (pending.length === 0) return covered;
      const target =
        deps.mainUpstream && deps.credentials
          ? resolveLearningTarget(
              { name: 'memory search keys', ...deps.settings.extractor },
              deps.mainUpstream,
              deps.credentials,
              await deps.reads.latestModel(),
            )
          : undefined;
      if (!target) throw new LearningMisconfiguredError('no model for memory search keys: set memory.extractor_model or llm.model_id');
      const { written, asked } = await askMemorySearchKeys(context, target, prompt, pending);
      context.logger.info({ units: asked.length, languages: seen, more: pending.length > asked.length }, 'memory search keys written');
      return async (client) => {
        await covered(client);
        for (const { unit, language, keys } of written)
          await client.query(
            `INSERT INTO memory_search_keys (content_hash, language, keys, prompt_version, model, created_at) VALUES ($1, $2, $3, $4, $5, ${DB_CLOCK_MS})
             ON CONFLICT (content_hash, language) DO UPDATE SET keys = excluded.keys, prompt_version = excluded.prompt_version, model = excluded.model,
               created_at = excluded.created_at`,
            [unit.hash, language, toPostgresText(JSON.stringify(keys)), prompt.version, target.model],
          );
        await reindexWithKeys(
          client,
          deps.search,
          asked.map((unit) => unit.id),
        );
        // The rest of a large memory goes on in a job of its own (or, when this one is that job, in a rerun of it).
        if (pending.length > asked.length)
          await deps.queue.enqueue(SEARCH_KEYS_JOB, {}, { dedupeKey: `${SEARCH_KEYS_JOB}:more`, rerunIfRunning: true }, client);
      };
    },
  };
}

/**
 * Rewrites the index entries of units `ids` with the search keys their texts have now (what
 * MemoryStore.reindexUnit does on SQLite), taking their scopes' locks first, in one order.
 */
export async function reindexWithKeys(client: pg.PoolClient, search: PgMemorySearch, ids: readonly string[]): Promise<void> {
  if (ids.length === 0) return;
  const scopes = await client.query<{ scope: string }>('SELECT DISTINCT scope FROM memory_units WHERE id = ANY($1::text[]) ORDER BY scope', [ids]);
  for (const { scope } of scopes.rows) await lockScope(client, fromPostgresText(scope));
  const rows = (await client.query('SELECT * FROM memory_units WHERE id = ANY($1::text[]) ORDER BY rowid', [ids])).rows.map(sqliteRowOf);
  const keysByHash = await searchKeysOf(
    client,
    rows.map((row) => row.content),
  );
  const entries: IndexEntry[] = rows.map((row) => ({
    sequence: row.rowid,
    id: row.id,
    scope: row.scope,
    previous: row.previous_raw,
    tokens: indexTokens(row.scope, withSearchKeyTerms(row, keysByHash.get(contentHash(row.content)) ?? [])),
    active: row.status === 'active',
  }));
  await search.index(entries, client);
}

/** The search keys (every language) stored for each of `contents`, by content hash; texts without keys are absent. */
export async function searchKeysOf(client: pg.PoolClient, contents: readonly string[]): Promise<Map<string, string[]>> {
  const keysByHash = new Map<string, string[]>();
  if (contents.length === 0) return keysByHash;
  const stored = await client.query('SELECT content_hash, keys FROM memory_search_keys WHERE content_hash = ANY($1::text[]) ORDER BY language', [
    [...new Set(contents.map(contentHash))],
  ]);
  for (const row of keyRows.parse(stored.rows))
    keysByHash.set(row.content_hash, [
      ...(keysByHash.get(row.content_hash) ?? []),
      ...z
        .array(z.string())
        .catch([])
        .parse(JSON.parse(fromPostgresText(row.keys))),
    ]);
  return keysByHash;
}
