import { appendFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { z } from 'zod';
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

/** A version's columns (not the folder it names: a history is read for one folder). */
const VERSION_COLUMNS = 'id, name, version, action, content, generation, source, created_at';

/** A version recorded from a change made by hand in the folder, as the skill log shows it (without its text). */
export type ChangeOnDisk = Omit<VersionRow, 'content'>;

/** The history's source line of a change a person made in the skills folder, recorded when the library next read it. */
export const ON_DISK = { edited: 'edited on disk', added: 'added on disk', deleted: 'deleted on disk' } as const;

/** The source line of a skill's first version in a folder the library switched to (see LibrarySwitch). */
export const IN_SWITCHED_LIBRARY = 'in the folder switched to';

/** State key of the library's generation (also read by the RL buffer, which tags every sample with it). */
export const GENERATION_KEY = 'skills.generation';

/** State keys of the skills folder the history and the generation last described, and of the switches between folders. */
const LIBRARY_KEY = 'skills.library';
const SWITCHES_KEY = 'skills.library_switches';

/**
 * `skills.dir` pointed at another folder: the injected skills are another library's, so it moves the
 * generation once (RL's samples from before were served other skills), and the old folder's
 * history stays under its name for when it is the library again.
 */
export interface LibrarySwitch {
  from: string;
  to: string;
  generation: number;
  created_at: number;
}

const librarySwitches = z.array(z.object({ from: z.string(), to: z.string(), generation: z.number(), created_at: z.number() }));

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

  /** The skills folder this is the history of: every version recorded or read names it. */
  readonly library: string;

  constructor(
    private readonly db: Db,
    private readonly skillsDir: string,
  ) {
    this.state = new StateStore(db);
    this.library = resolve(skillsDir);
    this.statements = {
      insert: db.prepare<[string, number, string, string, number, string | null, number, string]>(
        'INSERT INTO skill_versions (name, version, action, content, generation, source, created_at, library) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
      ),
      versions: db.prepare<[string, string], VersionRow>(`SELECT ${VERSION_COLUMNS} FROM skill_versions WHERE library = ? AND name = ? ORDER BY id`),
      latest: db.prepare<[string, string], VersionRow>(`SELECT ${VERSION_COLUMNS} FROM skill_versions WHERE library = ? AND name = ? ORDER BY id DESC LIMIT 1`),
      live: db.prepare<[string, string], { name: string }>(
        "SELECT v.name FROM skill_versions v JOIN (SELECT name, MAX(id) AS id FROM skill_versions WHERE library = ? GROUP BY name) l ON v.id = l.id WHERE v.library = ? AND v.action != 'remove'",
      ),
      onDisk: db.prepare<[string, string, string, string], ChangeOnDisk>(
        'SELECT id, name, version, action, generation, source, created_at FROM skill_versions WHERE library = ? AND source IN (?, ?, ?) ORDER BY id',
      ),
      adopt: db.prepare<[string]>('UPDATE skill_versions SET library = ? WHERE library IS NULL'),
      known: db.prepare<[string], { one: number }>('SELECT 1 AS one FROM skill_versions WHERE library = ? LIMIT 1'),
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
    this.statements.insert.run(entry.name, entry.version, entry.action, entry.content, entry.generation, entry.source ?? null, Date.now(), this.library);
  }

  versions(name: string): VersionRow[] {
    return this.statements.versions.all(this.library, name);
  }

  latest(name: string): VersionRow | undefined {
    return this.statements.latest.get(this.library, name);
  }

  /** Skills whose last recorded version is not a removal: what the library held when it was last recorded. */
  liveNames(): string[] {
    return this.statements.live.all(this.library, this.library).map((row) => row.name);
  }

  /** The versions recorded from changes made by hand in the folder (ON_DISK), oldest first. */
  changesOnDisk(): ChangeOnDisk[] {
    return this.statements.onDisk.all(this.library, ON_DISK.edited, ON_DISK.added, ON_DISK.deleted);
  }

  /** Whether the generation last described this folder's skills (false: claimLibrary has something to record). */
  describesItsFolder(): boolean {
    return this.state.get(LIBRARY_KEY) === this.library;
  }

  /**
   * Makes this folder the one the generation describes; call holding the write lock. The first folder
   * (no folder remembered: a new install, or one from before versions named their folder) takes the
   * versions that name none. Another folder is a library switch: recorded, with a new generation;
   * `newFolder` when no version names it (its skills' first versions are the switch's).
   */
  claimLibrary(): { switched?: LibrarySwitch; newFolder?: boolean } {
    const previous = this.state.get(LIBRARY_KEY);
    if (previous === this.library) return {};
    this.state.set(LIBRARY_KEY, this.library);
    if (previous === undefined) {
      this.statements.adopt.run(this.library);
      return {};
    }
    const switched = { from: previous, to: this.library, generation: this.bumpGeneration(), created_at: Date.now() };
    this.state.set(SWITCHES_KEY, JSON.stringify([...this.allSwitches(), switched]));
    return { switched, newFolder: this.statements.known.get(this.library) === undefined };
  }

  /** The library switches from or to this folder, oldest first. */
  librarySwitches(): LibrarySwitch[] {
    return this.allSwitches().filter((entry) => entry.from === this.library || entry.to === this.library);
  }

  private allSwitches(): LibrarySwitch[] {
    let parsed: unknown;
    try {
      parsed = JSON.parse(this.state.get(SWITCHES_KEY) ?? '[]');
    } catch {
      parsed = [];
    }
    const read = librarySwitches.safeParse(parsed);
    return read.success ? read.data : [];
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
