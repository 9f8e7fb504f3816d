/**
 * Skills in the team store: each skill's current SKILL.md is a row of `skills` (migration 20),
 * every accepted change a row of `skill_versions`, the library generation the state row
 * `skills.generation` (the key the personal install uses, so `store import-sqlite` carries it over).
 *
 * Every write is optimistic: it names the version it was based on (0: the skill did not exist) and
 * is refused with a `SkillConflictError` if another node wrote the skill since. Nothing is ever
 * overwritten unseen; `editWithRetry` is the loop a writer that can re-apply its edit uses (re-read,
 * re-apply, write again), so two nodes evolving one skill at once keep both edits as successive
 * versions.
 *
 * Every write transaction first bumps the generation row, which holds that row's lock until commit:
 * skill writes across the team are serialised, so generations are handed out in commit order. A
 * node that has seen generation G has therefore seen every write numbered G or below, and catching
 * up is "rows with a generation above G" — `SkillSubscription` relies on that. Writes are rare
 * (evolutions, imports, a person's edit), so one lock for them all costs nothing measurable.
 *
 * Every committed write also notifies `SKILLS_CHANNEL` from inside its transaction (PostgreSQL
 * delivers a notification only on commit, and never for a rolled-back one).
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { Pool, PoolClient } from 'pg';
import { SkillError } from '../../errors.js';
import { inTransaction } from './transaction.js';
import { writeFileAtomic } from '../../shared/atomic-write.js';
import { mergeBodies, type PlannedChange } from '../../skills/evolution/apply.js';
import { GENERATION_KEY, type VersionAction, type VersionRow } from '../../skills/history.js';
import { skillInjectionReason } from '../../skills/screen.js';
import { nextSkillFields, parseSkillFile, sameSkillContent, serializeSkill } from '../../skills/skill-file.js';
import type { UnchangedResult } from '../../skills/service.js';
import type { Skill, SkillDraft } from '../../skills/types.js';
import { redactSecrets } from '../../text/index.js';
import type { SkillVersionStore } from '../ports.js';

/** The LISTEN/NOTIFY channel of skill changes; the payload is `{"generation":G,"name":N}`. */
export const SKILLS_CHANNEL = 'metaclaw_skills';

/** A write based on a version that is no longer the current one: re-read, re-apply, write again. */
export class SkillConflictError extends SkillError {
  constructor(
    readonly skill: string,
    readonly basedOn: number,
    readonly current: number,
  ) {
    super(`skill ${skill} is at version ${current}, not ${basedOn}: another node changed it; re-read it and apply the change again`, 'skill_conflict');
  }
}

/** A skill as the team store holds it. `version` is 0 for a skill that does not exist. */
export interface StoredSkill {
  readonly skill: Skill;
  readonly text: string;
  readonly version: number;
  readonly generation: number;
}

export interface SkillWrite {
  readonly skill: Skill;
  readonly text: string;
  readonly action: VersionAction;
  readonly version: number;
  readonly generation: number;
}

/** What changed after a generation: live skills written since, and names removed since. */
export interface SkillChanges {
  readonly generation: number;
  readonly changed: readonly StoredSkill[];
  readonly removed: readonly string[];
}

export interface WriteOptions {
  /** The version the change was made from; 0 when the writer saw no such skill. */
  readonly basedOn: number;
  readonly source: string;
  readonly action?: VersionAction;
  readonly now?: Date;
}

export interface FolderImport {
  readonly imported: string[];
  /** Skills whose file says what the store's version does (with `overwrite`): left as they are, no new version. */
  readonly unchanged: string[];
  readonly skipped: Array<{ path: string; reason: string }>;
  /** Skills whose text reads like prompt injection: refused (also listed as skipped), or imported with `force`. */
  readonly suspicious: Array<{ name: string; path: string; reason: string; imported: boolean }>;
  readonly generation: number | undefined;
}

interface SkillRow {
  name: string;
  version: number;
  content: string;
  removed: boolean;
  generation: string | number | bigint;
}

/** Where a skill row says it was read from (`Skill.path`): the folder it exports to. */
export function teamSkillPath(name: string): string {
  return `team:${name}/SKILL.md`;
}

/** Parses a stored SKILL.md; every write validated it, so a failure means a newer writer's format. */
export function parseStoredSkill(name: string, text: string): Skill | { reason: string } {
  const parsed = parseSkillFile(text, teamSkillPath(name), name);
  return 'skill' in parsed ? parsed.skill : parsed;
}

export class PgSkillStore implements SkillVersionStore {
  constructor(private readonly pool: Pool) {}

  /** The library generation: how many accepted changes the team's library has had. */
  async generation(): Promise<number> {
    const result = await this.pool.query<{ value: string }>('SELECT value FROM state WHERE key = $1', [GENERATION_KEY]);
    return Number(result.rows[0]?.value ?? 0);
  }

  async get(name: string): Promise<StoredSkill | undefined> {
    const result = await this.pool.query<SkillRow>('SELECT name, version, content, removed, generation FROM skills WHERE name = $1 AND NOT removed', [name]);
    const row = result.rows[0];
    return row ? stored(row) : undefined;
  }

  /** Every live skill, by name. */
  async all(): Promise<StoredSkill[]> {
    return (await this.changesSince(0)).changed.slice();
  }

  /**
   * Rows written after `generation`, read with the generation counter in one snapshot (so the
   * counter returned covers exactly the rows returned). 0 reads the whole library.
   */
  async changesSince(generation: number): Promise<SkillChanges> {
    const client = await this.pool.connect();
    let broken: Error | undefined;
    try {
      await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
      const counter = await client.query<{ value: string }>('SELECT value FROM state WHERE key = $1', [GENERATION_KEY]);
      const rows = await client.query<SkillRow>('SELECT name, version, content, removed, generation FROM skills WHERE generation > $1 ORDER BY name', [
        generation,
      ]);
      await client.query('COMMIT');
      const changed: StoredSkill[] = [];
      const removed: string[] = [];
      for (const row of rows.rows) {
        const skill = row.removed ? undefined : stored(row);
        if (skill) changed.push(skill);
        else removed.push(row.name);
      }
      return { generation: Math.max(generation, Number(counter.rows[0]?.value ?? 0)), changed, removed };
    } catch (error) {
      // A client whose rollback fails is in no state to be reused: released with the error, it leaves the pool.
      await client.query('ROLLBACK').catch((rollback: Error) => (broken = rollback));
      throw error;
    } finally {
      client.release(broken);
    }
  }

  /** Writes the next version of a skill from a draft, if the skill is still at `basedOn`. */
  async write(draft: SkillDraft, options: WriteOptions): Promise<SkillWrite> {
    return this.transaction(async (client) => {
      const generation = await bumpGeneration(client);
      const row = await this.lockRow(client, draft.name, options.basedOn);
      return this.put(client, draft, row, generation, options);
    });
  }

  /**
   * A person's save (PUT /v1/skills/{name}): `draft` written over the skill at `basedOn` as `write`
   * does, or nothing when it says what the current version does (see sameSkillContent). The check
   * holds the locks a write takes (the generation row, then the skill's row), so the version and
   * generation an "unchanged" answer gives are the store's at one moment: a write in flight is
   * waited for, and a skill it moved on from `basedOn` is a conflict, as for a write.
   */
  async save(draft: SkillDraft, options: WriteOptions): Promise<SkillWrite | UnchangedResult> {
    return inTransaction(
      this.pool,
      async (client): Promise<SkillWrite | UnchangedResult> => {
        const seen = await lockGeneration(client);
        const row = await this.lockRow(client, draft.name, options.basedOn);
        const current = row && !row.removed ? stored(row) : undefined;
        if (current && sameSkillContent(current.skill, draft)) return { skill: current.skill, action: 'unchanged', version: current.version, generation: seen };
        return this.put(client, draft, row, await bumpGeneration(client), options);
      },
      async (result, client) => {
        // Nothing written: rolled back, which also lets go of the locks.
        if (result.action === 'unchanged') return false;
        await client.query('SELECT pg_notify($1, $2)', [SKILLS_CHANNEL, JSON.stringify({ generation: result.generation })]);
        return true;
      },
    );
  }

  /** Removes a skill (its row stays, marked removed, so nodes catching up see the removal). */
  async remove(name: string, options: Omit<WriteOptions, 'action'>): Promise<{ version: number; generation: number }> {
    return this.transaction(async (client) => {
      const generation = await bumpGeneration(client);
      const row = await this.lockRow(client, name, options.basedOn);
      if (!row || row.removed) throw new SkillError(`no skill named ${name}`, 'skill_not_found');
      const version = row.version + 1;
      const at = (options.now ?? new Date()).getTime();
      await client.query('UPDATE skills SET version = $2, content = $3, removed = true, generation = $4, updated_at = $5 WHERE name = $1', [
        name,
        version,
        '',
        generation,
        at,
      ]);
      await record(client, { name, version, action: 'remove', content: '', generation, source: options.source, at });
      return { version, generation };
    });
  }

  /**
   * Re-read, re-apply, retry: `edit` gets the skill as it is now (undefined if it does not exist)
   * and returns the draft to write from it, or undefined to write nothing. When another node wrote
   * the skill in between, `edit` runs again on that node's version, so both edits are kept.
   */
  async editWithRetry(
    name: string,
    edit: (current: StoredSkill | undefined) => SkillDraft | undefined | Promise<SkillDraft | undefined>,
    options: { source: string; action?: VersionAction; attempts?: number },
  ): Promise<SkillWrite | undefined> {
    const attempts = options.attempts ?? 8;
    for (let attempt = 1; ; attempt++) {
      const current = await this.get(name);
      const draft = await edit(current);
      if (!draft) return undefined;
      try {
        return await this.write(draft, { basedOn: current?.version ?? 0, source: options.source, ...(options.action ? { action: options.action } : {}) });
      } catch (error) {
        if (!(error instanceof SkillConflictError) || attempt >= attempts) throw error;
      }
      // A little jitter, so writers that keep colliding on one skill spread out rather than collide again.
      await new Promise((resolve) => setTimeout(resolve, Math.random() * 5 * attempt));
    }
  }

  /**
   * Writes one change an evolution planned against `seenVersion` of its skill. If the skill moved
   * on since (another node evolved it, or created it meanwhile), the change's body is merged into
   * the current text rather than replacing it — the rule `planChanges` applies to a skill the
   * evolver did not see — and retried until it lands.
   */
  async applyPlanned(change: PlannedChange, seenVersion: number | undefined, source: string): Promise<SkillWrite> {
    const written = await this.editWithRetry(
      change.draft.name,
      (current) => draftOver(current, change, seenVersion),
      // The action is what the write turns out to be: a planned create may land as an edit of a skill another node created.
      { source },
    );
    return written!;
  }

  /**
   * Writes an evolution's planned changes on `client`, inside the caller's transaction (a team
   * learning job's effect, so they are written once with the job), as one generation. Skill writes
   * are serialised by the generation row's lock, so a change meets no conflict here: one planned
   * against a version another node has replaced since is merged into the current text, as
   * `applyPlanned` does, and both edits are kept. The skills channel hears of it on commit.
   */
  async applyPlannedIn(
    client: PoolClient,
    changes: ReadonlyArray<{ change: PlannedChange; seenVersion: number | undefined }>,
    source: string,
  ): Promise<SkillWrite[]> {
    if (changes.length === 0) return [];
    const generation = await bumpGeneration(client);
    const writes: SkillWrite[] = [];
    for (const { change, seenVersion } of changes) {
      const row = await selectRow(client, change.draft.name, true);
      const current = row && !row.removed ? stored(row) : undefined;
      writes.push(await this.put(client, draftOver(current, change, seenVersion), row, generation, { basedOn: current?.version ?? 0, source }));
    }
    await client.query('SELECT pg_notify($1, $2)', [SKILLS_CHANNEL, JSON.stringify({ generation })]);
    return writes;
  }

  /** When the skill's latest version was recorded (ms), if it has one. */
  async lastChangeAt(name: string): Promise<number | undefined> {
    const result = await this.pool.query<{ at: number }>('SELECT max(created_at)::float8 AS at FROM skill_versions WHERE name = $1', [name]);
    return result.rows[0]?.at ?? undefined;
  }

  /** Every recorded version of a skill, oldest first (removals have empty content). */
  async versions(name: string): Promise<VersionRow[]> {
    const result = await this.pool.query<VersionRow>(
      'SELECT id::float8 AS id, name, version, action, content, generation::float8 AS generation, source, created_at::float8 AS created_at FROM skill_versions WHERE name = $1 ORDER BY id',
      [name],
    );
    return result.rows;
  }

  /**
   * Imports a folder of `<name>/SKILL.md` skills. A skill new to the team store is stored as its
   * file is, byte for byte and with its version, so a personal library moves over unchanged; one
   * that exists is replaced (with `overwrite`) as its next version. Invalid files, skills whose
   * text reads like prompt injection (unless `force`) and existing skills (without `overwrite`)
   * are reported and skipped; one whose file says what the store's version does is left as it is
   * (see sameSkillContent). The files beside an imported skill's SKILL.md replace those the team
   * store held for it. The whole import is one generation and one transaction. `flag` names the
   * option that replaces an existing skill, for the skip reason (default --overwrite).
   */
  async importFolder(
    folder: string,
    options: { overwrite?: boolean; force?: boolean; source?: string; moving?: boolean; flag?: string } = {},
  ): Promise<FolderImport> {
    const skipped: FolderImport['skipped'] = [];
    const unchanged: string[] = [];
    const suspicious: FolderImport['suspicious'] = [];
    const files: Array<{ name: string; path: string; text: string; skill: Skill; supporting: SupportingFile[]; injection?: string }> = [];
    const entries = existsSync(folder) ? readdirSync(folder, { withFileTypes: true }) : [];
    if (!existsSync(folder)) skipped.push({ path: folder, reason: 'folder not found' });
    for (const entry of entries) {
      if (!entry.isDirectory() || entry.name.startsWith('.')) continue;
      const path = join(folder, entry.name, 'SKILL.md');
      if (!existsSync(path)) {
        skipped.push({ path: join(folder, entry.name), reason: 'no SKILL.md in this folder' });
        continue;
      }
      const text = readFileSync(path, 'utf8');
      const parsed = parseSkillFile(text, path, entry.name);
      const injection = 'skill' in parsed ? skillInjectionReason(parsed.skill) : undefined;
      if ('reason' in parsed) skipped.push({ path, reason: parsed.reason });
      else if (injection && !options.force) {
        skipped.push({ path, reason: `looks like a prompt injection (${injection})` });
        suspicious.push({ name: parsed.skill.name, path, reason: injection, imported: false });
      } else {
        const supporting = supportingFiles(join(folder, entry.name));
        if ('reason' in supporting) skipped.push({ path: join(folder, entry.name), reason: supporting.reason });
        else files.push({ name: entry.name, path, text, skill: parsed.skill, supporting: supporting.files, ...(injection ? { injection } : {}) });
      }
    }
    if (files.length === 0) return { imported: [], unchanged, skipped, suspicious, generation: undefined };
    const source = options.source ?? `import from ${folder}`;
    return this.transaction(async (client) => {
      const generation = options.moving ? await movingGeneration(client) : await bumpGeneration(client);
      const imported: string[] = [];
      for (const file of files) {
        const row = await selectRow(client, file.name, true);
        const live = row && !row.removed;
        // An imported skill is injected into prompts: a key pasted into its text must not travel with it.
        const description = redactSecrets(file.skill.description);
        const body = redactSecrets(file.skill.body);
        const current = live ? stored(row)?.skill : undefined;
        const same = current !== undefined && sameSkillContent(current, { ...file.skill, description, body });
        // The same text again is counted unchanged below, never refused.
        if (live && !options.overwrite && !same) {
          // Moving an install (store import-sqlite, which has no option to replace one): the team's skill is kept.
          const reason = options.moving
            ? `the team store's ${file.name} differs from this file and is kept as it is`
            : `a skill named ${file.name} already exists (use ${options.flag ?? '--overwrite'} to replace it)`;
          skipped.push({ path: file.path, reason });
          continue;
        }
        if (same) {
          // The same text again (an import re-run, install-starter --force): a new version would only copy it.
          unchanged.push(file.name);
          continue;
        }
        const verbatim = !live && description === file.skill.description && body === file.skill.body && file.skill.version > (row?.version ?? 0);
        if (verbatim) {
          // Moving an install: its history came with its tables, this very version included; it is not recorded twice.
          const known =
            options.moving === true &&
            ((
              await client.query('SELECT 1 FROM skill_versions WHERE name = $1 AND version = $2 AND content = $3 LIMIT 1', [
                file.name,
                file.skill.version,
                file.text,
              ])
            ).rowCount ?? 0) > 0;
          await this.store(client, file.name, file.skill.version, file.text, generation, 'import', source, Date.now(), !known);
        } else {
          const { skill } = file;
          const draft: SkillDraft = {
            name: skill.name,
            description,
            category: skill.category,
            body,
            origin: 'imported',
            extra: skill.extra,
            sourceSessions: skill.sourceSessions,
          };
          await this.put(client, draft, row, generation, { basedOn: live ? row.version : 0, source, action: 'import' });
        }
        await replaceSupportingFiles(client, file.name, file.supporting);
        imported.push(file.name);
        if (file.injection) suspicious.push({ name: file.name, path: file.path, reason: file.injection, imported: true });
      }
      // Nothing imported (every skill already there): nothing committed, not even the generation.
      return { imported, unchanged, skipped, suspicious, generation: imported.length > 0 ? generation : undefined };
    });
  }

  /**
   * Writes every live skill as `<folder>/<name>/SKILL.md`, the personal library's layout, each file
   * exactly the stored text (so a personal install loads them as they are). Returns the names.
   */
  async exportSkills(folder: string): Promise<string[]> {
    const skills = await this.all();
    for (const { skill, text } of skills) writeFileAtomic(join(folder, skill.name, 'SKILL.md'), text);
    const live = new Set(skills.map(({ skill }) => skill.name));
    const supporting = await this.pool.query<{ name: string; path: string; content: Buffer; mode: number }>(
      'SELECT name, path, content, mode FROM skill_files ORDER BY name, path',
    );
    for (const file of supporting.rows)
      if (live.has(file.name)) writeFileAtomic(join(folder, file.name, ...file.path.split('/')), file.content, { mode: file.mode });
    return skills.map(({ skill }) => skill.name).sort();
  }

  /** Locks the skill's row (if any) and checks the writer's base version against it. */
  private async lockRow(client: PoolClient, name: string, basedOn: number): Promise<SkillRow | undefined> {
    const row = await selectRow(client, name, true);
    const current = row && !row.removed ? row.version : 0;
    if (current !== basedOn) throw new SkillConflictError(name, basedOn, current);
    return row;
  }

  /** Serialises the next version of a skill from `draft` over `row` and stores it. */
  private async put(client: PoolClient, draft: SkillDraft, row: SkillRow | undefined, generation: number, options: WriteOptions): Promise<SkillWrite> {
    const before = row && !row.removed ? stored(row)?.skill : undefined;
    const fields = nextSkillFields(before, draft, options.now ?? new Date(), generation);
    // Versions only go up, across removals too: a write based on an older one must always conflict.
    fields.version = (row?.version ?? 0) + 1;
    const text = serializeSkill(fields);
    const skill = parseStoredSkill(draft.name, text);
    if ('reason' in skill) throw new SkillError(`skill ${draft.name} is invalid: ${skill.reason}`, 'skill_invalid');
    const action = options.action ?? (before ? 'update' : 'create');
    await this.store(client, draft.name, fields.version, text, generation, action, options.source, (options.now ?? new Date()).getTime());
    return { skill, text, action, version: fields.version, generation };
  }

  private async store(
    client: PoolClient,
    name: string,
    version: number,
    text: string,
    generation: number,
    action: VersionAction,
    source: string,
    at: number,
    recordVersion = true,
  ): Promise<void> {
    await client.query(
      `INSERT INTO skills (name, version, content, removed, generation, updated_at) VALUES ($1, $2, $3, false, $4, $5)
       ON CONFLICT (name) DO UPDATE SET version = excluded.version, content = excluded.content, removed = false, generation = excluded.generation, updated_at = excluded.updated_at`,
      [name, version, text, generation, at],
    );
    if (recordVersion) await record(client, { name, version, action, content: text, generation, source, at });
  }

  /** Runs `work` in a transaction that notifies the skills channel when it commits; one that wrote nothing (no generation) is rolled back. */
  private async transaction<T extends { generation: number | undefined }>(work: (client: PoolClient) => Promise<T>): Promise<T> {
    return inTransaction(this.pool, work, async (result, client) => {
      if (result.generation === undefined) return false;
      await client.query('SELECT pg_notify($1, $2)', [SKILLS_CHANNEL, JSON.stringify({ generation: result.generation })]);
      return true;
    });
  }
}

/** What a planned change writes over the skill as it now is: the draft, or its body merged in if the skill moved on since the evolver saw it. */
function draftOver(current: StoredSkill | undefined, change: PlannedChange, seenVersion: number | undefined): SkillDraft {
  return !current || current.version === (seenVersion ?? 0) ? change.draft : mergedInto(current.skill, change.draft);
}

/** The draft that adds `draft`'s body to the skill as it now is (its own description and name kept). */
function mergedInto(current: Skill, draft: SkillDraft): SkillDraft {
  return {
    name: current.name,
    description: current.description,
    category: current.category,
    body: mergeBodies(current.body, draft.body),
    origin: current.origin,
    ...(draft.sourceSessions ? { sourceSessions: draft.sourceSessions } : {}),
  };
}

/** The generation as it is, with its row locked until the transaction ends, as a write's bump locks it (the row is made if missing). */
async function lockGeneration(client: PoolClient): Promise<number> {
  const result = await client.query<{ value: string }>(
    `INSERT INTO state (key, value) VALUES ($1, '0') ON CONFLICT (key) DO UPDATE SET value = state.value RETURNING value`,
    [GENERATION_KEY],
  );
  return Number(result.rows[0]!.value);
}

/** Takes the next generation; the row stays locked until commit (see the module comment). */
async function bumpGeneration(client: PoolClient): Promise<number> {
  const result = await client.query<{ value: string }>(
    `INSERT INTO state (key, value) VALUES ($1, '1')
     ON CONFLICT (key) DO UPDATE SET value = (state.value::bigint + 1)::text RETURNING value`,
    [GENERATION_KEY],
  );
  return Number(result.rows[0]!.value);
}

/**
 * `moving`: a personal install's own library moved into a team store that holds no skill yet (`store
 * import-sqlite`) is the same library, so it keeps the generation its state row brought along:
 * samples recorded under it stay trainable. The row is still locked, as a bump would lock it; into a
 * store that already has skills, the import is a change like any other and bumps the generation.
 */
async function movingGeneration(client: PoolClient): Promise<number> {
  const empty = (await client.query<{ found: boolean }>('SELECT NOT EXISTS (SELECT 1 FROM skills) AS found')).rows[0]!.found;
  if (!empty) return bumpGeneration(client);
  const result = await client.query<{ value: string }>(
    // At least 1: rows of generation 0 would be invisible to a node catching up from 0.
    `INSERT INTO state (key, value) VALUES ($1, '1') ON CONFLICT (key) DO UPDATE SET value = GREATEST(state.value::bigint, 1)::text RETURNING value`,
    [GENERATION_KEY],
  );
  return Number(result.rows[0]!.value);
}

/** A file beside a skill's SKILL.md (a script, a reference), as the team store keeps it. */
interface SupportingFile {
  /** Relative to the skill's folder, '/' separated. */
  path: string;
  content: Buffer;
  mode: number;
}

/** More than this beside one SKILL.md and the skill is not imported (a folder of data, not a skill). */
const SUPPORTING_BYTES = 8 * 1024 * 1024;

/** The files beside a skill's SKILL.md, every level down; links are not followed (a link may point anywhere on the machine). */
function supportingFiles(skillFolder: string): { files: SupportingFile[] } | { reason: string } {
  const files: SupportingFile[] = [];
  let bytes = 0;
  const walk = (relative: string): string | undefined => {
    for (const entry of readdirSync(join(skillFolder, relative), { withFileTypes: true })) {
      const path = relative === '' ? entry.name : `${relative}/${entry.name}`;
      if (entry.isDirectory()) {
        const problem = walk(path);
        if (problem) return problem;
      } else if (entry.isFile() && path !== 'SKILL.md') {
        const full = join(skillFolder, path);
        const content = readFileSync(full);
        bytes += content.length;
        if (bytes > SUPPORTING_BYTES) return `the files beside its SKILL.md hold more than ${SUPPORTING_BYTES / 1024 / 1024} MiB`;
        files.push({ path, content, mode: statSync(full).mode & 0o777 });
      }
    }
    return undefined;
  };
  const reason = walk('');
  return reason ? { reason } : { files };
}

/** A skill's supporting files become exactly these (an import of its folder replaces what was there). */
async function replaceSupportingFiles(client: PoolClient, name: string, files: readonly SupportingFile[]): Promise<void> {
  await client.query('DELETE FROM skill_files WHERE name = $1', [name]);
  const at = Date.now();
  for (const file of files)
    await client.query('INSERT INTO skill_files (name, path, content, mode, updated_at) VALUES ($1, $2, $3, $4, $5)', [
      name,
      file.path,
      file.content,
      file.mode,
      at,
    ]);
}

async function selectRow(client: PoolClient, name: string, lock: boolean): Promise<SkillRow | undefined> {
  const result = await client.query<SkillRow>(`SELECT name, version, content, removed, generation FROM skills WHERE name = $1${lock ? ' FOR UPDATE' : ''}`, [
    name,
  ]);
  return result.rows[0];
}

async function record(
  client: PoolClient,
  entry: { name: string; version: number; action: VersionAction; content: string; generation: number; source: string; at: number },
): Promise<void> {
  await client.query('INSERT INTO skill_versions (name, version, action, content, generation, source, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7)', [
    entry.name,
    entry.version,
    entry.action,
    entry.content,
    entry.generation,
    entry.source,
    entry.at,
  ]);
}

function stored(row: SkillRow): StoredSkill | undefined {
  const skill = parseStoredSkill(row.name, row.content);
  if ('reason' in skill) return undefined;
  return { skill, text: row.content, version: row.version, generation: Number(row.generation) };
}
