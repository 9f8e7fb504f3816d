import type { Db } from '../store/index.js';
import { nodeChildren } from './list-chains.js';

/** Where encoding stores the parts of a body. */
export interface SegmentSink {
  /** Stores a part, or counts one more use of it when it is stored already. True when it is new. */
  put(hash: string, json: string): boolean;
  /** Counts one more use of a stored part; false when it is not stored (deleted since). */
  reference(hash: string): boolean;
}

export interface SegmentSource {
  get(hash: string): string | undefined;
}

/** What one stored body refers to directly: parts (values) and list nodes (whose own references follow). */
export interface PartReferences {
  parts: string[];
  lists: string[];
}

/**
 * payload_segments: the parts of stored bodies, each kept once by content hash, and
 * payload_segment_refs: how many things use each (bodies, and list nodes for their items and the
 * node they extend). A part goes when its count reaches zero, so retention deletes exactly what no
 * kept body uses, however long ago it was last written; a node going releases what it used in turn.
 * The counts live apart from the parts because a row is rewritten whole on update: counting a use
 * of a 30 KB system prompt in place rewrote 30 KB every turn.
 */
export class SegmentTable implements SegmentSink, SegmentSource {
  private readonly statements;

  constructor(db: Db) {
    this.statements = {
      get: db.prepare<[string], { json: string }>('SELECT json FROM payload_segments WHERE hash = ?'),
      count: db.prepare<[string], { refs: number }>(
        'INSERT INTO payload_segment_refs (hash, refs) VALUES (?, 1) ON CONFLICT(hash) DO UPDATE SET refs = refs + 1 RETURNING refs',
      ),
      insert: db.prepare<[string, string]>('INSERT INTO payload_segments (hash, json) VALUES (?, ?) ON CONFLICT(hash) DO NOTHING'),
      reference: db.prepare<[string]>('UPDATE payload_segment_refs SET refs = refs + 1 WHERE hash = ?'),
      release: db.prepare<[string], { refs: number }>('UPDATE payload_segment_refs SET refs = refs - 1 WHERE hash = ? RETURNING refs'),
      deleteCount: db.prepare<[string]>('DELETE FROM payload_segment_refs WHERE hash = ?'),
      delete: db.prepare<[string]>('DELETE FROM payload_segments WHERE hash = ?'),
    };
  }

  get(hash: string): string | undefined {
    return this.statements.get.get(hash)?.json;
  }

  put(hash: string, json: string): boolean {
    if (this.statements.count.get(hash)!.refs !== 1) return false;
    this.statements.insert.run(hash, json);
    return true;
  }

  reference(hash: string): boolean {
    return this.statements.reference.run(hash).changes === 1;
  }

  /** One use fewer of each; what nothing uses any more is deleted, and a deleted node releases its own. */
  release(references: PartReferences): void {
    const pending: Array<{ hash: string; list: boolean }> = [
      ...references.parts.map((hash) => ({ hash, list: false })),
      ...references.lists.map((hash) => ({ hash, list: true })),
    ];
    for (let next = pending.pop(); next; next = pending.pop()) {
      const row = this.statements.release.get(next.hash);
      if (!row || row.refs > 0) continue;
      const json = next.list ? this.get(next.hash) : undefined;
      this.delete(next.hash);
      if (json === undefined) continue;
      const { prefix, items } = nodeChildren(json);
      if (prefix !== undefined) pending.push({ hash: prefix, list: true });
      for (const item of items) pending.push({ hash: item, list: false });
    }
  }

  /** Deletes a part whatever uses it (forgetting: its text must leave the file). */
  delete(hash: string): void {
    this.statements.delete.run(hash);
    this.statements.deleteCount.run(hash);
  }
}
