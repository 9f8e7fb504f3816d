import type { Db } from './database.js';

/** Small persistent key-value state (generation counters, last-run marks). */
export class StateStore {
  private readonly getStatement;
  private readonly setStatement;

  constructor(db: Db) {
    this.getStatement = db.prepare<[string], { value: string }>('SELECT value FROM state WHERE key = ?');
    this.setStatement = db.prepare('INSERT INTO state(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value');
  }

  get(key: string): string | undefined {
    return this.getStatement.get(key)?.value;
  }

  set(key: string, value: string): void {
    this.setStatement.run(key, value);
  }
}
