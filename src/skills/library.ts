import { existsSync, readdirSync, readFileSync, renameSync, rmSync, statSync, watch, type FSWatcher } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from '../logging/index.js';
import { writeFileAtomic } from '../shared/atomic-write.js';
import { nextSkillFields, parseSkillFile, serializeSkill } from './skill-file.js';
import type { Skill, SkillDraft, SkillProblem } from './types.js';
import { SkillError } from '../errors.js';
import { makeFolders } from '../shared/make-folders.js';

export interface LibraryChange {
  changed: Skill[];
  removed: string[];
  /** Read from the folder by a scan (a hand edit, another process's write), not written by this library. */
  scanned?: true;
}

interface FileState {
  mtimeMs: number;
  size: number;
}

/**
 * The skill library on disk: `<dir>/<name>/SKILL.md`. Files are the source of truth; edits,
 * additions and deletions made by hand are picked up without a restart (a directory watcher, plus
 * a slow poll as a safety net). Invalid files are reported and skipped, never fatal.
 */
export class SkillLibrary {
  private readonly skills = new Map<string, Skill>();
  private readonly files = new Map<string, FileState>();
  private readonly invalid = new Map<string, SkillProblem>();
  private readonly listeners: Array<(change: LibraryChange) => void> = [];
  private watcher: FSWatcher | undefined;
  private poll: NodeJS.Timeout | undefined;
  private debounce: NodeJS.Timeout | undefined;

  constructor(
    readonly dir: string,
    private readonly logger: Logger,
  ) {}

  onChange(listener: (change: LibraryChange) => void): void {
    this.listeners.push(listener);
  }

  get(name: string): Skill | undefined {
    return this.skills.get(name);
  }

  all(): Skill[] {
    return [...this.skills.values()];
  }

  get size(): number {
    return this.skills.size;
  }

  problems(): SkillProblem[] {
    return [...this.invalid.values()];
  }

  /** Reads every SKILL.md that changed since the last scan. Returns what changed. */
  scan(): LibraryChange {
    const change: LibraryChange = { changed: [], removed: [] };
    const seen = new Set<string>();
    let folders: string[] = [];
    try {
      folders = readdirSync(this.dir, { withFileTypes: true })
        .filter((entry) => entry.isDirectory() && !entry.name.startsWith('.'))
        .map((entry) => entry.name);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') this.logger.warn({ err: error, dir: this.dir }, 'cannot read the skills folder');
    }
    for (const folder of folders) {
      const path = join(this.dir, folder, 'SKILL.md');
      let state: FileState;
      try {
        const stat = statSync(path);
        state = { mtimeMs: stat.mtimeMs, size: stat.size };
      } catch {
        continue; // a folder without SKILL.md is not a skill
      }
      seen.add(folder);
      const previous = this.files.get(folder);
      if (previous && previous.mtimeMs === state.mtimeMs && previous.size === state.size) continue;
      this.files.set(folder, state);
      const loaded = this.loadFolder(folder, path);
      if (loaded) change.changed.push(loaded);
      else if (this.skills.delete(folder)) change.removed.push(folder);
    }
    for (const folder of [...this.files.keys()]) {
      if (seen.has(folder)) continue;
      this.files.delete(folder);
      this.invalid.delete(folder);
      if (this.skills.delete(folder)) change.removed.push(folder);
    }
    if (change.changed.length > 0 || change.removed.length > 0) this.emit({ ...change, scanned: true });
    return change;
  }

  /** Watches the folder; changes are rescanned after a short debounce. */
  startWatching(): void {
    makeFolders(this.dir);
    try {
      this.watcher = watch(this.dir, { recursive: true }, () => this.scheduleScan());
      this.watcher.on('error', (error) => {
        this.logger.warn({ err: error }, 'skills folder watcher failed; relying on polling');
        this.watcher?.close();
        this.watcher = undefined;
      });
    } catch (error) {
      this.logger.warn({ err: error }, 'cannot watch the skills folder; relying on polling');
    }
    this.poll = setInterval(() => this.safeScan(), 15_000);
    this.poll.unref();
  }

  stopWatching(): void {
    this.watcher?.close();
    this.watcher = undefined;
    if (this.poll) clearInterval(this.poll);
    if (this.debounce) clearTimeout(this.debounce);
  }

  /**
   * Writes a skill atomically (temp file + rename), bumping its version; the library sees the new
   * text at once. Returns the skill before (if any) and after.
   */
  write(draft: SkillDraft, options: { generation?: number; now?: Date; minVersion?: number } = {}): { before: Skill | undefined; after: Skill; text: string } {
    const before = this.skills.get(draft.name) ?? this.readFresh(draft.name);
    const fields = nextSkillFields(before, draft, options.now ?? new Date(), options.generation);
    fields.version = Math.max(fields.version, options.minVersion ?? 1);
    const text = serializeSkill(fields);
    this.writeText(draft.name, text);
    const after = this.skills.get(draft.name);
    if (!after) throw new SkillError(`skill ${draft.name} did not validate after writing: ${this.invalid.get(draft.name)?.reason ?? 'unknown reason'}`);
    return { before, after, text };
  }

  /** Writes an exact SKILL.md text (revert, import); it must validate. */
  writeText(name: string, text: string): Skill {
    const folder = join(this.dir, name);
    const path = join(folder, 'SKILL.md');
    makeFolders(folder);
    writeFileAtomic(path, text);
    const stat = statSync(path);
    this.files.set(name, { mtimeMs: stat.mtimeMs, size: stat.size });
    const loaded = this.loadFolder(name, path);
    if (!loaded) throw new SkillError(`skill ${name} is invalid: ${this.invalid.get(name)?.reason ?? 'unknown reason'}`);
    this.emit({ changed: [loaded], removed: [] });
    return loaded;
  }

  /** Removes a skill's folder (moved aside first, so a reader never sees half a folder). */
  remove(name: string): Skill | undefined {
    const folder = join(this.dir, name);
    const existing = this.skills.get(name);
    if (!existsSync(folder)) return existing;
    const aside = join(this.dir, `.removed-${name}-${process.pid}-${Date.now()}`);
    renameSync(folder, aside);
    rmSync(aside, { recursive: true, force: true });
    this.files.delete(name);
    this.invalid.delete(name);
    this.skills.delete(name);
    this.emit({ changed: [], removed: [name] });
    return existing;
  }

  /**
   * Whether `name`'s SKILL.md is gone from a folder that is there: deleted by hand. Not when the
   * file is there but invalid, nor when the whole folder is missing (an unmounted disk, a mistyped
   * skills.dir), which says nothing about what a person deleted.
   */
  deletedFromFolder(name: string): boolean {
    return !this.skills.has(name) && existsSync(this.dir) && !existsSync(join(this.dir, name, 'SKILL.md'));
  }

  /** The current text of a skill's file, if it exists. */
  readText(name: string): string | undefined {
    try {
      return readFileSync(join(this.dir, name, 'SKILL.md'), 'utf8');
    } catch {
      return undefined;
    }
  }

  private readFresh(name: string): Skill | undefined {
    const path = join(this.dir, name, 'SKILL.md');
    if (!existsSync(path)) return undefined;
    return this.loadFolder(name, path);
  }

  private loadFolder(folder: string, path: string): Skill | undefined {
    let text: string;
    try {
      text = readFileSync(path, 'utf8');
    } catch (error) {
      this.reject(folder, path, `cannot read: ${(error as Error).message}`);
      return undefined;
    }
    const result = parseSkillFile(text, path, folder);
    if ('reason' in result) {
      this.reject(folder, path, result.reason);
      return undefined;
    }
    this.invalid.delete(folder);
    this.skills.set(folder, result.skill);
    return result.skill;
  }

  private reject(folder: string, path: string, reason: string): void {
    const known = this.invalid.get(folder);
    if (known?.reason !== reason) this.logger.warn({ path, reason }, 'skipping an invalid skill file');
    this.invalid.set(folder, { path, reason });
  }

  private scheduleScan(): void {
    if (this.debounce) clearTimeout(this.debounce);
    this.debounce = setTimeout(() => this.safeScan(), 100);
    this.debounce.unref();
  }

  private safeScan(): void {
    try {
      const change = this.scan();
      if (change.changed.length > 0 || change.removed.length > 0) {
        this.logger.info({ changed: change.changed.map((skill) => skill.name), removed: change.removed }, 'skill library changed on disk');
      }
    } catch (error) {
      this.logger.error({ err: error }, 'rescanning the skills folder failed');
    }
  }

  private emit(change: LibraryChange): void {
    for (const listener of this.listeners) {
      try {
        listener(change);
      } catch (error) {
        this.logger.error({ err: error }, 'a skill library listener failed');
      }
    }
  }
}
