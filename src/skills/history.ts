import { appendFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Db } from '../store/index.js';
import { StateStore } from '../store/index.js';
import type { SkillVersionStore } from '../store/ports.js';
import { makeFolders } from '../shared/make-folders.js';

export type VersionAction = 'create' | 'update' | 'remove' | 'revert' | 'import' | 'install' | 'manual';

export interface VersionRow {
  id: number;
  name: string;
  version: number;
  action: VersionAction;
  content: string;
  generation: number;
  source: string | null;
  created_at: number;
}

/** A version recorded from a change made by hand in the folder, as the skill log shows it (without its text). */
export type ChangeOnDisk = Omit<VersionRow, 'content'>;

/** The history's source line of a change a person made in the skills folder, recorded when the library next read it. */
export const ON_DISK = { edited: 'edited on disk', added: 'added on disk', deleted: 'deleted on disk' } as const;

/** State key of the library's generation (also read by the RL buffer, which tags every sample with it). */
export const GENERATION_KEY = 'skills.generation';

/**
 * Every accepted change to the library: versioned (so `skills diff` and `skills revert` work),
 * counted by the library's generation (persisted; RL drops samples older than a generation change),
 * and appended to MetaClaw's `evolution_history.jsonl` in the skills folder.
 */
export class SkillHistory implements SkillVersionStore {
  private readonly state: StateStore;
  private readonly statements;
  /** Read on every injected turn, so kept in memory; refreshed when the library changes on disk. */
  private cachedGeneration: number | undefined;

  constructor(
    private readonly db: Db,
    private readonly skillsDir: string,
  ) {
    this.state = new StateStore(db);
    this.statements = {
      insert: db.prepare<[string, number, string, string, number, string | null, number]>(
        'INSERT INTO skill_versions (name, version, action, content, generation, source, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)',
      ),
      versions: db.prepare<[string], VersionRow>('SELECT * FROM skill_versions WHERE name = ? ORDER BY id'),
      latest: db.prepare<[string], VersionRow>('SELECT * FROM skill_versions WHERE name = ? ORDER BY id DESC LIMIT 1'),
      live: db.prepare<[], { name: string }>(
        "SELECT v.name FROM skill_versions v JOIN (SELECT name, MAX(id) AS id FROM skill_versions GROUP BY name) l ON v.id = l.id WHERE v.action != 'remove'",
      ),
      onDisk: db.prepare<[string, string, string], ChangeOnDisk>(
        'SELECT id, name, version, action, generation, source, created_at FROM skill_versions WHERE source IN (?, ?, ?) ORDER BY id',
      ),
    };
  }

  get generation(): number {
    this.cachedGeneration ??= Number(this.state.get(GENERATION_KEY) ?? '0');
    return this.cachedGeneration;
  }

  /** Forgets the cached generation (another process — the CLI — may have changed it). */
  refresh(): void {
    this.cachedGeneration = undefined;
  }

  /** Counts one accepted change to the library; returns the new generation. */
  bumpGeneration(): number {
    const next = Number(this.state.get(GENERATION_KEY) ?? '0') + 1;
    this.state.set(GENERATION_KEY, String(next));
    this.cachedGeneration = next;
    return next;
  }

  record(entry: { name: string; version: number; action: VersionAction; content: string; generation: number; source?: string }): void {
    this.statements.insert.run(entry.name, entry.version, entry.action, entry.content, entry.generation, entry.source ?? null, Date.now());
  }

  versions(name: string): VersionRow[] {
    return this.statements.versions.all(name);
  }

  latest(name: string): VersionRow | undefined {
    return this.statements.latest.get(name);
  }

  /** Skills whose last recorded version is not a removal: what the library held when it was last recorded. */
  liveNames(): string[] {
    return this.statements.live.all().map((row) => row.name);
  }

  /** The versions recorded from changes made by hand in the folder (ON_DISK), oldest first. */
  changesOnDisk(): ChangeOnDisk[] {
    return this.statements.onDisk.all(ON_DISK.edited, ON_DISK.added, ON_DISK.deleted);
  }

  /**
   * One line per accepted evolution, in MetaClaw's file (plus our fields). Appended holding the
   * database's write lock: a forget in another process (SkillQuotes) rewrites the file under it.
   */
  appendEvolution(event: Record<string, unknown>): void {
    makeFolders(this.skillsDir);
    this.db.transaction(() => appendFileSync(evolutionLogFile(this.skillsDir), `${evolutionLine(event)}\n`, { mode: 0o600 })).immediate();
  }
}

/** The evolution log of the library in `skillsDir` (MetaClaw's file name). */
export function evolutionLogFile(skillsDir: string): string {
  return join(skillsDir, 'evolution_history.jsonl');
}

/** An evolution as a line of the log (evolution_history.jsonl; the team store's skill_evolutions): its time first, then the record. */
export function evolutionLine(event: Record<string, unknown>, at = new Date()): string {
  return JSON.stringify({ timestamp: at.toISOString(), ...event });
}
