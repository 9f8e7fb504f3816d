import type pg from 'pg';
import { z } from 'zod';
import type { SegmentSink } from '../../conversation/segment-table.js';

/**
 * The body encoder (conversation/payload-codec.ts) asks its segment sink synchronously whether a
 * part or list node is stored, and PostgreSQL answers only asynchronously. So a turn's bodies are
 * encoded against what this stage knows of payload_segment_refs: a pass that asks about a hash not
 * known yet is thrown away, the hashes it asked about are read in one query, and the pass runs
 * again (two passes for a typical turn). A complete pass's uses are then written in one statement.
 *
 * Another node may create or delete the same part between the read and the write. Nothing is
 * locked for the read; the write checks that each part existed (or not) as the pass assumed, and
 * a mismatch is a SegmentRaceError: the turn sink retries the transaction. Exactly the checks
 * that matter: an encoder that took a part for new counted the uses of its items, which would be
 * counted twice if another node created it meanwhile.
 */
export class StagedSegments {
  /** Uses per hash as the database has them in this transaction (0: not stored). */
  private readonly known = new Map<string, number>();

  constructor(private readonly client: pg.PoolClient) {}

  /**
   * Runs `encode` with a sink until a pass needed nothing unknown, then writes that pass's part
   * uses. `encode` must leave nothing behind when it runs again (the caller copies what it mutates).
   */
  async encode<T>(encode: (sink: SegmentSink) => T, maxPasses = 6): Promise<T> {
    for (let pass = 0; pass < maxPasses; pass++) {
      const sink = new PassSink(this.known);
      const result = encode(sink);
      if (sink.misses.size === 0) {
        await this.write(sink);
        return result;
      }
      await this.read([...sink.misses]);
    }
    throw new Error(`encoding a turn's bodies still asked about unread parts after ${maxPasses} passes`);
  }

  private async read(hashes: string[]): Promise<void> {
    const result = await this.client.query('SELECT hash, refs FROM payload_segment_refs WHERE hash = ANY($1::text[])', [hashes]);
    const rows = z.array(refsRow).parse(result.rows);
    for (const hash of hashes) this.known.set(hash, 0);
    for (const row of rows) this.known.set(row.hash, row.refs);
  }

  private async write(sink: PassSink): Promise<void> {
    const uses = [...sink.added].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    if (uses.length === 0) return;
    // Sorted: nodes writing the same parts lock their rows in one order, never in a cycle.
    const result = await this.client.query(
      `INSERT INTO payload_segment_refs (hash, refs) SELECT * FROM unnest($1::text[], $2::bigint[]) AS used(hash, refs) ORDER BY hash
       ON CONFLICT (hash) DO UPDATE SET refs = payload_segment_refs.refs + excluded.refs RETURNING hash, refs`,
      [uses.map(([hash]) => hash), uses.map(([, added]) => added)],
    );
    const after = new Map(
      z
        .array(refsRow)
        .parse(result.rows)
        .map((row) => [row.hash, row.refs]),
    );
    const created: Array<[string, string]> = [];
    for (const [hash, added] of uses) {
      const wasStored = this.known.get(hash)! > 0;
      const now = after.get(hash) ?? 0;
      // Stored before: more uses now than this pass added. New: exactly this pass's.
      if (wasStored !== now > added) throw new SegmentRaceError(hash);
      this.known.set(hash, now);
      if (!wasStored) created.push([hash, sink.json.get(hash)!]);
    }
    if (created.length > 0) {
      await this.client.query('INSERT INTO payload_segments (hash, json) SELECT * FROM unnest($1::text[], $2::text[]) ON CONFLICT (hash) DO NOTHING', [
        created.map(([hash]) => hash),
        created.map(([, json]) => json),
      ]);
    }
  }
}

/** A part changed under a pass (another node created or deleted it): the transaction is retried. */
export class SegmentRaceError extends Error {
  readonly retryable = true;
  constructor(hash: string) {
    super(`payload part ${hash} changed while a turn was being stored`);
    this.name = 'SegmentRaceError';
  }
}

const refsRow = z.object({ hash: z.string(), refs: z.coerce.number() });

/** One encoding pass: answers as SegmentTable would from the known counts plus this pass's own uses, and notes what it did not know. */
class PassSink implements SegmentSink {
  readonly added = new Map<string, number>();
  readonly json = new Map<string, string>();
  readonly misses = new Set<string>();

  constructor(private readonly known: ReadonlyMap<string, number>) {}

  put(hash: string, json: string): boolean {
    const uses = this.uses(hash);
    if (uses === undefined) return true; // any answer: this pass is run again once the hash is read
    this.added.set(hash, (this.added.get(hash) ?? 0) + 1);
    if (uses === 0) this.json.set(hash, json);
    return uses === 0;
  }

  reference(hash: string): boolean {
    const uses = this.uses(hash);
    if (!uses) return false;
    this.added.set(hash, (this.added.get(hash) ?? 0) + 1);
    return true;
  }

  private uses(hash: string): number | undefined {
    const known = this.known.get(hash);
    if (known === undefined) {
      this.misses.add(hash);
      return undefined;
    }
    return known + (this.added.get(hash) ?? 0);
  }
}
