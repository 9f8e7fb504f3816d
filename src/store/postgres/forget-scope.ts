import type pg from 'pg';
import { z } from 'zod';
import { documentReferences } from '../../conversation/payload-codec.js';
import { PayloadScrubber, type ScrubbedSegments } from '../../conversation/payload-scrub.js';
import type { PartReferences } from '../../conversation/segment-table.js';
import { nodeChildren } from '../../conversation/list-chains.js';
import { contentHash } from '../../memory/search-keys.js';
import { escapeMemoryText } from '../../memory/render.js';
import { forgetNeedles, holdsNeedle, scrubJsonStrings, scrubNeedles } from '../../shared/forget-text.js';
import type { MemoryUnit } from '../../memory/types.js';
import { PgMemorySearch } from './memory-search.js';
import { unitOfRow } from './memory-units.js';
import { lockScope } from './memory-workspace.js';
import { relinkAfterDeleting } from './raw-links.js';
import { scrubPgSkillQuotes } from './skill-quotes.js';
import { fromPostgresText, toPostgresText } from './text.js';

/** What forgetting a scope took out of the team store. */
export interface ForgottenScope {
  /** Memory units deleted (every status). */
  units: number;
  /** Their vectors. */
  vectors: number;
  /** Search keys of their texts that no other unit shares. */
  searchKeys: number;
  /** The scope's `state` keys (memory extraction watermarks). */
  stateKeys: number;
  /** Turns whose summary texts were scrubbed. */
  turns: number;
  /** Turns whose stored bodies (received, forwarded, injected) were rewritten. */
  payloads: number;
  /** Memory learning jobs of the scope that had not finished (they would have written into it again). */
  jobs: number;
  /** Skill evolution log lines and review proposals whose quotes of the texts were scrubbed. */
  skillRecords: number;
}

/**
 * Forgets a memory scope in the team store, inside the caller's transaction: what
 * `MemoryService.forgetScope` does to a personal install, written for PostgreSQL. Every unit of the
 * scope goes with its keyword index entries (postings, df and the scope's size, kept right so other
 * scopes rank as before: their tokens are keyed by their own scope), vectors, search keys nobody
 * else's text needs, and the scope's extraction watermarks. The units' texts are scrubbed from the
 * sessions they came from and from every session recorded in the scope (a member's own), the
 * way SQLite's `ConversationStore.scrubTexts` does: turn summaries, stored bodies and the parts they
 * share; RL token ids of a changed session go, since they encode its texts and cannot be scrubbed.
 * Team-store addition: the injected-context record of those turns is scrubbed too (it quotes
 * recalled memories word for word). Sessions of other scopes whose turns injected one of the units
 * (named by id in turn_payloads.injected, as SQLite's `scrubInjected` finds them) are scrubbed as
 * well. The deletes fire migration 22's trigger, so nodes hear of it.
 */
export async function forgetPgScope(pool: pg.Pool, client: pg.PoolClient, scope: string): Promise<ForgottenScope> {
  // Memory jobs of the scope write under this lock: one completing now finishes first (and is undone below).
  await lockScope(client, scope);
  // Jobs first: a node completing one of them holds its row, so this waits for it and its writes
  // are then deleted below; one not yet completing finds its row gone and writes nothing (lease lost).
  const jobs =
    (
      await client.query("DELETE FROM jobs WHERE status IN ('queued', 'leased') AND starts_with(kind, 'memory.') AND (payload::jsonb ->> 'scope') = $1", [
        scope,
      ])
    ).rowCount ?? 0;
  // Vectors first: deleting a unit would cascade to its vector uncounted.
  const vectors =
    (await client.query('DELETE FROM memory_vectors WHERE scope = $1 OR rowid IN (SELECT rowid FROM memory_units WHERE scope = $1)', [scope])).rowCount ?? 0;
  const units = z
    .array(deletedUnit.extend({ id: z.string() }))
    .parse((await client.query('DELETE FROM memory_units WHERE scope = $1 RETURNING rowid, id, content, source_turns', [scope])).rows);
  // Index entries of the deleted units, and any of the scope whose unit went some other way; not
  // those of a unit another node committed since the delete began (it stays, indexed).
  const orphans = await client.query<{ seq: string }>(
    'SELECT seq FROM memory_search_docs d WHERE scope = $1 AND NOT EXISTS (SELECT 1 FROM memory_units u WHERE u.rowid = d.seq)',
    [scope],
  );
  await new PgMemorySearch(pool).remove([...units.map((unit) => unit.rowid), ...orphans.rows.map((row) => Number(row.seq))], client);
  await client.query('DELETE FROM memory_scope_sizes WHERE scope = $1 AND units <= 0', [scope]);

  // A missing watermark reads as 0, which is what SQLite resets them to.
  const stateKeys = (await client.query('DELETE FROM state WHERE starts_with(key, $1)', [toPostgresText(`memory.extracted:${scope}\u0000`)])).rowCount ?? 0;
  // The sessions of other scopes that injected them (the shared scope's rules reach every member's) are scrubbed too.
  return {
    units: units.length,
    vectors,
    stateKeys,
    jobs,
    ...(await forgetTexts(
      client,
      units,
      scope,
      units.map((unit) => unit.id),
    )),
  };
}

/**
 * Forgets one unit for good (`DELETE /v1/memory/{id}` on a team node): what `MemoryService.forget`
 * does to a personal install — the unit, its vector and index entry, search keys no other unit
 * needs, and its text scrubbed from the turns it came from. Undefined when there is no such unit.
 */
export async function forgetPgUnit(pool: pg.Pool, client: pg.PoolClient, id: string): Promise<MemoryUnit | undefined> {
  const scope = (await client.query<{ scope: string }>('SELECT scope FROM memory_units WHERE id = $1', [id])).rows[0]?.scope;
  if (scope === undefined) return undefined;
  await lockScope(client, scope);
  const [row] = (await client.query('DELETE FROM memory_units WHERE id = $1 RETURNING *', [id])).rows as unknown[];
  if (row === undefined) return undefined;
  const unit = unitOfRow(row);
  const deleted = deletedUnit.parse(row);
  const search = new PgMemorySearch(pool);
  await search.remove([deleted.rowid], client);
  // The raw turn after it now follows the one before it, lending that turn's words (as on SQLite).
  await relinkAfterDeleting(client, search, [{ rowid: deleted.rowid, previous_raw: linkOf.parse(row).previous_raw }]);
  await forgetTexts(client, [deleted], null, [id]);
  return unit;
}

const deletedUnit = z.object({ rowid: z.coerce.number(), content: z.string(), source_turns: z.string() });
const linkOf = z.object({ previous_raw: z.coerce.number().nullable() });

/** After units are deleted: search keys of their texts that no unit still holds, and their texts scrubbed from turns. */
async function forgetTexts(
  client: pg.PoolClient,
  units: ReadonlyArray<z.infer<typeof deletedUnit>>,
  scope: string | null,
  /** Units whose injecting turns' sessions are scrubbed too (a scope's sessions are all scrubbed anyway). */
  injectedIds: readonly string[] = [],
): Promise<{ searchKeys: number; turns: number; payloads: number; skillRecords: number }> {
  // Search keys are shared by content: those of a text another scope still holds stay.
  const contents = [...new Set(units.map((unit) => unit.content))];
  const kept = new Set(
    (await client.query<{ content: string }>('SELECT DISTINCT content FROM memory_units WHERE content = ANY($1::text[])', [contents])).rows.map(
      (row) => row.content,
    ),
  );
  const hashes = contents.filter((content) => !kept.has(content)).map((content) => contentHash(fromPostgresText(content)));
  const searchKeys = (await client.query('DELETE FROM memory_search_keys WHERE content_hash = ANY($1::text[])', [hashes])).rowCount ?? 0;
  const turnIds = units.flatMap((unit) => z.array(z.string()).catch([]).parse(JSON.parse(unit.source_turns)));
  // Also as an injected block quoted them: on one line, tags escaped (render.ts).
  const quoted = [...new Set([...contents, ...contents.map(escapeMemoryText)])];
  const sessions = await scrubSessions(client, scope, turnIds, quoted, injectedIds);
  // The skill records quote sessions word for word, whichever session: scrubbed wherever they hold the texts.
  return { searchKeys, ...sessions, skillRecords: await scrubPgSkillQuotes(client, contents) };
}

const turnTextsRow = z.object({
  id: z.string(),
  session_id: z.string(),
  query: z.string().nullable(),
  response_text: z.string().nullable(),
  tool_calls: z.string().nullable(),
});
const payloadRow = z.object({ turn_id: z.string(), received: z.string().nullable(), injected: z.string().nullable(), forwarded: z.string().nullable() });

/** The texts out of the scope's sessions and of those the units came from (SQLite's `scrubTexts`). */
async function scrubSessions(
  client: pg.PoolClient,
  /** Also every session recorded in this scope (a member's own), beside those the turns belong to. */
  scope: string | null,
  turnIds: readonly string[],
  texts: readonly string[],
  /** Also the sessions of the turns that injected these units (a standing rule, a recalled memory). */
  injectedIds: readonly string[],
): Promise<{ turns: number; payloads: number }> {
  // Columns hold text as stored (NUL as its stand-in); bodies are JSON, whose strings decode to the real text.
  const stored = forgetNeedles(texts);
  if (stored.length === 0) return { turns: 0, payloads: 0 };
  const plain = stored.map(fromPostgresText);
  const scrub = (needles: readonly string[]) => (text: string) => scrubNeedles(needles, text);
  const holds = (needles: readonly string[]) => (text: string | null) => holdsNeedle(needles, text);
  const sessions = (
    await client.query<{ id: string }>(
      `SELECT id FROM sessions WHERE scope = $1 UNION SELECT session_id FROM turns WHERE id = ANY($2::text[])
       UNION SELECT t.session_id FROM turn_payloads p JOIN turns t ON t.id = p.turn_id
         CROSS JOIN LATERAL regexp_matches(p.injected, '"id":"([^"]+)"', 'g') AS named(id)
         JOIN unnest($3::text[]) AS unit(id) ON unit.id = named.id[1]
         WHERE p.injected IS NOT NULL AND cardinality($3::text[]) > 0
       ORDER BY 1`,
      // One pass over what every turn injected, each id it names looked up among the units (a scope's may be thousands).
      [scope, turnIds.map(toPostgresText), injectedIds.map(toPostgresText)],
    )
  ).rows.map((row) => row.id);
  if (sessions.length === 0) return { turns: 0, payloads: 0 };

  let turns = 0;
  const changed = new Set<string>();
  const holdsStored = holds(stored);
  for (const raw of (
    await client.query('SELECT id, session_id, query, response_text, tool_calls FROM turns WHERE session_id = ANY($1::text[]) ORDER BY id', [sessions])
  ).rows) {
    const turn = turnTextsRow.parse(raw);
    if (!holdsStored(turn.query) && !holdsStored(turn.response_text) && !holdsStored(turn.tool_calls)) continue;
    const clean = (text: string | null) => (text === null ? null : scrub(stored)(text));
    await client.query('UPDATE turns SET query = $1, response_text = $2, tool_calls = $3 WHERE id = $4', [
      clean(turn.query),
      clean(turn.response_text),
      clean(turn.tool_calls),
      turn.id,
    ]);
    turns++;
    changed.add(turn.session_id);
  }

  const payloads = await scrubPayloads(client, sessions, scrub(plain), holds(plain));
  for (const session of payloads.sessions) changed.add(session);
  if (changed.size > 0)
    await client.query(
      'UPDATE rl_samples SET prompt_tokens = NULL, response_tokens = NULL, response_logprobs = NULL WHERE session_id = ANY($1::text[]) AND prompt_tokens IS NOT NULL',
      [[...changed]],
    );
  return { turns, payloads: payloads.rewritten };
}

/**
 * Rewrites the sessions' stored bodies with PayloadScrubber, the code SQLite runs. The scrubber
 * reads and counts parts synchronously, so it runs against the parts read beforehand
 * (StagedParts); a pass that asked about a part not read is run again once it is. The part tables
 * are locked against writers first: the final counts are then written as they stand, and a node
 * storing a turn meanwhile waits, then finds its assumptions stale and retries (SegmentRaceError).
 */
async function scrubPayloads(
  client: pg.PoolClient,
  sessions: readonly string[],
  scrub: (text: string) => string,
  holds: (text: string | null) => boolean,
): Promise<{ rewritten: number; sessions: Set<string> }> {
  const rows = (
    await client.query(
      `SELECT t.session_id, p.turn_id, p.received, p.injected, p.forwarded FROM turn_payloads p JOIN turns t ON t.id = p.turn_id
       WHERE t.session_id = ANY($1::text[]) ORDER BY t.session_id, t.seq`,
      [sessions],
    )
  ).rows.map((raw) => ({ ...payloadRow.parse(raw), session: z.string().parse((raw as { session_id: unknown }).session_id) }));
  if (rows.length === 0) return { rewritten: 0, sessions: new Set() };
  await client.query('LOCK TABLE payload_segments, payload_segment_refs IN SHARE ROW EXCLUSIVE MODE');
  const parts = new StagedParts(client);
  await parts.preload(rows.flatMap((row) => [documentReferences(row.received), documentReferences(row.forwarded)]));

  for (let pass = 0; ; pass++) {
    const segments = parts.pass();
    const scrubber = new PayloadScrubber(segments, scrub, holds);
    const updates: Array<{ turnId: string; session: string; received: string | null; forwarded: string | null; injected: string | null }> = [];
    // A pass that guessed about an unread part may fail for it: it is run again before its error counts.
    let failure: Error | undefined;
    try {
      for (const row of rows) {
        const rewritten = scrubber.rewrite(row.session, row.received, row.forwarded);
        const injected = row.injected !== null && holds(row.injected) ? JSON.stringify(scrubJsonStrings(JSON.parse(row.injected), scrub)) : undefined;
        if (!rewritten && injected === undefined) continue;
        updates.push({
          turnId: row.turn_id,
          session: row.session,
          received: rewritten ? rewritten.received : row.received,
          forwarded: rewritten ? rewritten.forwarded : row.forwarded,
          injected: injected ?? row.injected,
        });
      }
      scrubber.finish();
    } catch (error) {
      failure = error instanceof Error ? error : new Error(String(error));
    }
    if (segments.misses.size > 0) {
      if (pass === MAX_PASSES) throw new Error(`scrubbing stored bodies still asked about unread parts after ${MAX_PASSES} passes`);
      await parts.read([...segments.misses]);
      continue;
    }
    if (failure !== undefined) throw failure;
    await parts.write(segments);
    for (const update of updates)
      await client.query('UPDATE turn_payloads SET received = $1, forwarded = $2, injected = $3 WHERE turn_id = $4', [
        update.received,
        update.forwarded,
        update.injected,
        update.turnId,
      ]);
    return { rewritten: updates.length, sessions: new Set(updates.map((update) => update.session)) };
  }
}

const MAX_PASSES = 8;

/** A part as read: its JSON and uses (null: not stored). */
type Part = { json: string; refs: number } | null;
const partRow = z.object({ hash: z.string(), json: z.string(), refs: z.coerce.number().nullable() });

/** Parts read from the locked tables; each pass changes a copy of them. */
class StagedParts {
  private readonly parts = new Map<string, Part>();

  constructor(private readonly client: pg.PoolClient) {}

  /** The bodies' parts and list chains, node by node to the chains' starts, in one recursive query, then the nodes' items. */
  async preload(references: readonly PartReferences[]): Promise<void> {
    const lists = [...new Set(references.flatMap((reference) => reference.lists))];
    const items: string[] = references.flatMap((reference) => reference.parts);
    if (lists.length > 0) {
      const nodes = await this.client.query(
        `WITH RECURSIVE chain(hash, json) AS (
           SELECT hash, json FROM payload_segments WHERE hash = ANY($1::text[])
           UNION
           SELECT s.hash, s.json FROM chain c JOIN payload_segments s ON s.hash = (c.json::jsonb ->> 'p')
         ) SELECT c.hash, c.json, r.refs FROM chain c LEFT JOIN payload_segment_refs r ON r.hash = c.hash`,
        [lists],
      );
      for (const node of z.array(partRow).parse(nodes.rows)) {
        this.parts.set(node.hash, { json: node.json, refs: node.refs ?? 0 });
        items.push(...nodeChildren(node.json).items);
      }
    }
    await this.read([...items, ...lists]);
  }

  async read(hashes: readonly string[]): Promise<void> {
    const wanted = [...new Set(hashes)].filter((hash) => !this.parts.has(hash));
    if (wanted.length === 0) return;
    const result = await this.client.query(
      'SELECT s.hash, s.json, r.refs FROM payload_segments s LEFT JOIN payload_segment_refs r ON r.hash = s.hash WHERE s.hash = ANY($1::text[])',
      [wanted],
    );
    for (const hash of wanted) this.parts.set(hash, null);
    for (const row of z.array(partRow).parse(result.rows)) this.parts.set(row.hash, { json: row.json, refs: row.refs ?? 0 });
  }

  pass(): PassParts {
    return new PassParts(this.parts);
  }

  /** A complete pass's parts as they now stand: gone ones deleted, the others' counts set, new ones inserted. */
  async write(pass: PassParts): Promise<void> {
    const changed = [...pass.changed].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    const gone = changed.filter(([, part]) => part === null).map(([hash]) => hash);
    const kept = changed.filter((entry): entry is [string, { json: string; refs: number }] => entry[1] !== null);
    if (gone.length > 0) {
      await this.client.query('DELETE FROM payload_segments WHERE hash = ANY($1::text[])', [gone]);
      await this.client.query('DELETE FROM payload_segment_refs WHERE hash = ANY($1::text[])', [gone]);
    }
    if (kept.length === 0) return;
    await this.client.query('INSERT INTO payload_segments (hash, json) SELECT * FROM unnest($1::text[], $2::text[]) ON CONFLICT (hash) DO NOTHING', [
      kept.map(([hash]) => hash),
      kept.map(([, part]) => part.json),
    ]);
    await this.client.query(
      `INSERT INTO payload_segment_refs (hash, refs) SELECT * FROM unnest($1::text[], $2::bigint[])
       ON CONFLICT (hash) DO UPDATE SET refs = excluded.refs`,
      [kept.map(([hash]) => hash), kept.map(([, part]) => part.refs)],
    );
  }
}

/** One scrubbing pass: SegmentTable's rules over the parts read, changes kept aside; what it did not know is noted. */
class PassParts implements ScrubbedSegments {
  readonly changed = new Map<string, Part>();
  readonly misses = new Set<string>();

  constructor(private readonly read: ReadonlyMap<string, Part>) {}

  get(hash: string): string | undefined {
    return this.part(hash)?.json;
  }

  put(hash: string, json: string): boolean {
    const part = this.part(hash);
    if (this.misses.has(hash)) return true; // any answer: the pass is run again once the hash is read
    this.changed.set(hash, { json: part?.json ?? json, refs: (part?.refs ?? 0) + 1 });
    return part === null || part === undefined;
  }

  reference(hash: string): boolean {
    const part = this.part(hash);
    if (!part) return false;
    this.changed.set(hash, { ...part, refs: part.refs + 1 });
    return true;
  }

  release(references: PartReferences): void {
    const pending = [...references.parts.map((hash) => ({ hash, list: false })), ...references.lists.map((hash) => ({ hash, list: true }))];
    for (let next = pending.pop(); next; next = pending.pop()) {
      const part = this.part(next.hash);
      if (!part) continue;
      if (part.refs > 1) {
        this.changed.set(next.hash, { ...part, refs: part.refs - 1 });
        continue;
      }
      this.changed.set(next.hash, null);
      if (!next.list) continue;
      const { prefix, items } = nodeChildren(part.json);
      if (prefix !== undefined) pending.push({ hash: prefix, list: true });
      for (const item of items) pending.push({ hash: item, list: false });
    }
  }

  delete(hash: string): void {
    this.changed.set(hash, null);
  }

  /** The part as this pass has it (null: not stored; undefined: not read, noted). */
  private part(hash: string): Part | undefined {
    if (this.changed.has(hash)) return this.changed.get(hash);
    if (!this.read.has(hash)) {
      this.misses.add(hash);
      return undefined;
    }
    return this.read.get(hash);
  }
}
