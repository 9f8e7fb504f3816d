import { existsSync, readFileSync } from 'node:fs';
import type pg from 'pg';
import { maskDatabaseUrl, type LoadedConfig } from '../config/index.js';
import { SkillError } from '../errors.js';
import { silentLogger } from '../logging/index.js';
import { skillsSettings } from '../runtime/settings.js';
import {
  evolutionLogFile,
  exportSkills,
  importSkills,
  installStarterSkills,
  revertDraft,
  sameSkillContent,
  skillInjectionReason,
  SkillsService,
  STARTER_DIR,
  type ChangeOnDisk,
  type LibrarySwitch,
  type ImportReport,
  type ProposalRow,
  type Skill,
  type SkillCredit,
  type SkillDraft,
  type SkillProblem,
  type VersionRow,
} from '../skills/index.js';
import { checkIntegrity, type Db } from '../store/index.js';
import { CliExit, errorText, loadCliConfig, pathErrorText } from './context.js';
import { onServedStore } from './store.js';

type Postgres = typeof import('../store/postgres/index.js');

/** What a change to the library did (a save, a revert, an approved proposal). */
export interface SkillChange {
  skill: Skill;
  action: string;
  version: number;
  generation: number;
  /** An approved proposal merged into this version of the skill, which changed after it was proposed. */
  mergedInto?: number;
}

/**
 * The skill library `metaclaw skills` works on, whichever store holds it: the install's own
 * (SkillsService on metaclaw.db and the skills folder) or, when store.url is set, the team store
 * the nodes serve from (PgSkillStore and its proposals and credit), whose folder copies on each
 * node are mirrors that no command may write.
 */
export interface SkillsBackend {
  /** Where the library is, for messages: the skills folder, or the team store's masked address. */
  readonly where: string;
  list(): Promise<Array<{ skill: Skill; credit: SkillCredit | undefined }>>;
  generation(): Promise<number>;
  /** SKILL.md files that failed to load (the team store holds none: every write is checked). */
  problems(): SkillProblem[];
  get(name: string): Promise<Skill | undefined>;
  creditOf(name: string): Promise<SkillCredit | undefined>;
  versions(name: string): Promise<VersionRow[]>;
  /** The skill's search keys by language, for its current text. */
  searchKeys(skill: Skill): Promise<Record<string, string[]>>;
  /** A person's save: refused (SkillError) if the skill exists and not `overwrite`, or reads like injection and `screen`. */
  save(draft: SkillDraft, source: string, options: { overwrite: boolean; screen: boolean }): Promise<SkillChange>;
  remove(name: string, source: string): Promise<{ removed: boolean; generation: number }>;
  revert(name: string, toVersion: number | undefined): Promise<SkillChange>;
  importFolder(folder: string, options: { overwrite: boolean; force: boolean }): Promise<ImportReport>;
  installStarter(options: { force: boolean }): Promise<ImportReport>;
  /** Writes every skill's folder (SKILL.md and the files beside it) under `folder`; the names, sorted. */
  exportTo(folder: string): Promise<string[]>;
  pending(): Promise<ProposalRow[]>;
  /** A proposal, decided or not (`skills log` says what became of one). */
  proposal(id: number): Promise<ProposalRow | undefined>;
  approve(id: number): Promise<SkillChange>;
  reject(id: number): Promise<ProposalRow>;
  /** The evolution log's lines, oldest first: evolution_history.jsonl, or the team store's skill_evolutions. */
  evolutions(): Promise<string[]>;
  /** The versions recorded from changes made by hand in the skills folder (the team store has no folder: none). */
  changesOnDisk(): Promise<ChangeOnDisk[]>;
  /** The switches of skills.dir from or to the skills folder (the team store has no folder: none). */
  librarySwitches(): Promise<LibrarySwitch[]>;
  /** The database's integrity check; undefined on the team store (`metaclaw store status` reads it). */
  integrity(): string[] | undefined;
}

/** Runs `action` on the library of the store the proxy serves from (see SkillsBackend). */
export async function withSkillsBackend(options: { config?: string }, action: (skills: SkillsBackend) => void | Promise<void>): Promise<void> {
  return onSkillsBackend(loadCliConfig(options.config ? { config: options.config } : {}), action);
}

/** Runs `action` on the library of the store `config` serves from. */
export async function onSkillsBackend(config: LoadedConfig, action: (skills: SkillsBackend) => void | Promise<void>): Promise<void> {
  return onServedStore(config, {
    team: async (postgres, pool, url) => {
      try {
        await action(teamBackend(postgres, pool, url));
      } catch (error) {
        // A refusal or a path the user gave is said as it is; withPool words the store's own failures.
        if (error instanceof SkillError || pathErrorText(error) !== undefined) throw new CliExit(errorText(error));
        throw error;
      }
    },
    personal: async (db) => {
      try {
        await action(personalBackend(config, db));
      } catch (error) {
        if (error instanceof CliExit) throw error;
        throw new CliExit(errorText(error));
      }
    },
  });
}

/** The install's own library, on `db` (its database). */
function personalBackend(config: LoadedConfig, db: Db): SkillsBackend {
  const service = new SkillsService({ db, logger: silentLogger(), settings: { ...skillsSettings(config), embedding: { apiBase: '', apiKey: '', model: '' } } });
  service.open({ watch: false });
  return {
    where: service.library.dir,
    list: async () => service.list(),
    generation: async () => service.history.generation,
    problems: () => service.library.problems(),
    get: async (name) => service.library.get(name),
    creditOf: async (name) => service.credit.figuresOf(name),
    versions: async (name) => service.history.versions(name),
    searchKeys: async (skill) => service.searchKeys.keysOf(skill),
    save: async (draft, source, options) => service.save(draft, source, options),
    remove: async (name, source) => service.remove(name, source),
    revert: async (name, toVersion) => service.revert(name, toVersion),
    importFolder: async (folder, options) => importSkills(service, folder, options),
    installStarter: async (options) => installStarterSkills(service, options),
    exportTo: async (folder) => exportSkills(service, folder),
    pending: async () => service.proposals.pending(),
    proposal: async (id) => service.proposals.get(id),
    approve: async (id) => service.approve(id),
    reject: async (id) => service.reject(id),
    evolutions: async () => {
      const file = evolutionLogFile(service.library.dir);
      return existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean) : [];
    },
    changesOnDisk: async () => service.history.changesOnDisk(),
    librarySwitches: async () => service.history.librarySwitches(),
    integrity: () => checkIntegrity(db),
  };
}

/** The team store's library, with the checks the personal one and the nodes' HTTP routes make. */
function teamBackend(postgres: Postgres, pool: pg.Pool, url: string): SkillsBackend {
  const store = new postgres.PgSkillStore(pool);
  const proposals = new postgres.PgSkillProposals(pool, store);
  const credit = new postgres.PgSkillCredit(pool);
  const importReport = (report: Awaited<ReturnType<typeof store.importFolder>>): ImportReport => {
    const refused = new Set(report.suspicious.filter((item) => !item.imported).map((item) => item.path));
    return { ...report, skipped: report.skipped.filter((item) => !refused.has(item.path)) };
  };
  return {
    where: `the team store at ${maskDatabaseUrl(url)}`,
    list: async () => {
      const [skills, figures] = await Promise.all([store.all(), credit.figures()]);
      return skills.map(({ skill }) => ({ skill, credit: figures.get(skill.name) }));
    },
    generation: () => store.generation(),
    problems: () => [],
    get: async (name) => (await store.get(name))?.skill,
    creditOf: (name) => credit.figuresOf(name),
    versions: (name) => store.versions(name),
    searchKeys: async (skill) => {
      const keys = new postgres.PgSkillKeys();
      await keys.refresh(pool);
      return keys.keysOf(skill);
    },
    save: async (draft, source, options) => {
      const current = await store.get(draft.name);
      if (current && !options.overwrite && !sameSkillContent(current.skill, draft))
        throw new SkillError(`a skill named ${draft.name} already exists`, 'skill_exists');
      const injection = options.screen ? skillInjectionReason(draft) : undefined;
      if (injection) throw new SkillError(`the skill reads like a prompt injection (${injection})`, 'suspicious_skill');
      return store.save(draft, { basedOn: current?.version ?? 0, source, action: 'manual' });
    },
    remove: async (name, source) => {
      const current = await store.get(name);
      if (!current) return { removed: false, generation: await store.generation() };
      return { removed: true, generation: (await store.remove(name, { basedOn: current.version, source })).generation };
    },
    revert: async (name, toVersion) => {
      const [current, versions] = await Promise.all([store.get(name), store.versions(name)]);
      const { draft, source } = revertDraft(name, current?.version, versions, toVersion);
      return store.write(draft, { basedOn: current?.version ?? 0, source, action: 'revert' });
    },
    importFolder: async (folder, options) => importReport(await store.importFolder(folder, { ...options, source: `cli import ${folder}` })),
    installStarter: async (options) =>
      importReport(await store.importFolder(STARTER_DIR, { overwrite: options.force, source: 'install-starter', flag: '--force' })),
    exportTo: (folder) => store.exportSkills(folder),
    pending: () => proposals.pending(),
    proposal: (id) => proposals.get(id),
    // Merged into the skill when it changed after the proposal was written, as a personal install approves.
    approve: (id) => proposals.approve(id),
    reject: async (id) => {
      const proposal = await proposals.get(id);
      if (!proposal || !(await proposals.decide(id, 'rejected'))) throw new SkillError(`no pending proposal #${id}`, 'proposal_not_found');
      return { ...proposal, status: 'rejected' };
    },
    evolutions: () => new postgres.PgSkillEvolutions(pool).lines(),
    changesOnDisk: async () => [],
    librarySwitches: async () => [],
    integrity: () => undefined,
  };
}
