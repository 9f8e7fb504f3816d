import type { Db } from './database.js';

/** Small persistent key-value state (generation counters, last-run marks). */
export class StateStore {
  private readonly getStatement;
  private readonly setStatement;
  private readonly prefixStatement;

  constructor(db: Db) {
    this.getStatement = db.prepare<[string], { value: string }>('SELECT value FROM state WHERE key = ?');
    this.setStatement = db.prepare('INSERT INTO state(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value');
    this.prefixStatement = db.prepare<[string, string], { key: string }>('SELECT key FROM state WHERE key >= ? AND key < ?');
  }

  /** Keys starting with `prefix`. */
  keysWithPrefix(prefix: string): string[] {
    return this.prefixStatement.all(prefix, `${prefix}\uffff`).map((row) => row.key);
  }

  get(key: string): string | undefined {
    return this.getStatement.get(key)?.value;
  }

  set(key: string, value: string): void {
    this.setStatement.run(key, value);
  }
}
