import { readFile } from 'node:fs/promises';
import { createTwoFilesPatch } from 'diff';
import { NotFoundError, SkillError } from '../errors.js';
import { linesBackward } from '../logging/log-reader.js';
import { readHistoryLine } from '../skills/evolution-log.js';
import {
  diffVersions,
  evolutionLogFile,
  skillLog,
  type ChangeOnDisk,
  type LibrarySwitch,
  presentCredit,
  presentProposal,
  type ProposalRow,
  type Skill,
  type SkillCredit,
  type SkillProblem,
  type SkillsService,
  type VersionRow,
} from '../skills/index.js';
import type { SkillSearchIndex } from '../skills/search-index.js';
import { uniqueTerms } from '../text/index.js';

type Maybe<T> = T | Promise<T>;

/**
 * What the skills pages read, from either store: the personal install's SkillsService (its files
 * and database), or a team node's mirror of the team's library with the team store's history.
 */
export interface SkillsPageReads {
  /** the library by name, each skill with its credit figures */
  list(): Maybe<Array<{ skill: Skill; credit: SkillCredit | undefined }>>;
  generation(): Maybe<number>;
  review: 'auto' | 'manual';
  index: Pick<SkillSearchIndex, 'search'>;
  get(name: string): Skill | undefined;
  pending(): Maybe<ProposalRow[]>;
  problems(): SkillProblem[];
  versions(name: string): Maybe<VersionRow[]>;
  creditOf(name: string): Maybe<SkillCredit | undefined>;
  recentSessions(name: string): Maybe<string[]>;
  /** the skill's SKILL.md as it is now (for the edit form) */
  text(skill: Skill): Promise<string>;
  /** the evolution log's last `count` lines, oldest first */
  evolutionLines(count: number): Maybe<string[]>;
  /** versions recorded from changes made by hand in the skills folder (a team store has no folder: none) */
  changesOnDisk(): Maybe<ChangeOnDisk[]>;
  /** switches of skills.dir from or to the skills folder (a team store has no folder: none) */
  librarySwitches(): Maybe<LibrarySwitch[]>;
  /** a proposal, decided or not (the log says what became of one) */
  proposal(id: number): Maybe<ProposalRow | undefined>;
}

/** The personal install's skills. */
export function sqliteSkillsReads(skills: SkillsService): SkillsPageReads {
  return {
    list: () => skills.list(),
    generation: () => skills.history.generation,
    review: skills.settings.review,
    index: skills.index,
    get: (name) => skills.library.get(name),
    pending: () => skills.proposals.pending(),
    problems: () => skills.library.problems(),
    versions: (name) => skills.history.versions(name),
    creditOf: (name) => skills.credit.figuresOf(name),
    recentSessions: (name) => skills.credit.recentSessions(name),
    // Read off the event loop: the file is the skill as on disk (a hand edit may not be a recorded version yet).
    text: (skill) => readFile(skill.path, 'utf8'),
    evolutionLines: (count) => {
      // From the end of the file: the log grows with every evolution and the page shows the last ones.
      const lines: string[] = [];
      for (const line of linesBackward(evolutionLogFile(skills.library.dir))) if (lines.push(line) >= count) break;
      return lines.reverse();
    },
    changesOnDisk: () => skills.history.changesOnDisk(),
    librarySwitches: () => skills.history.librarySwitches(),
    proposal: (id) => skills.proposals.get(id),
  };
}

/**
 * The skill log's last `count` entries, newest first: evolutions with what became of the proposals
 * they logged (as `metaclaw skills log` says it), and the changes made by hand in the folder.
 */
export async function skillLogData(skills: SkillsPageReads, count: number) {
  const lines = await skills.evolutionLines(count);
  let onDisk = await skills.changesOnDisk();
  let switches = await skills.librarySwitches();
  // Older evolutions were not read: a change by hand (or a switch) from before the first one read would stand in their place.
  const first = lines.length === count ? readHistoryLine(lines[0]!).timestamp : undefined;
  if (first !== undefined && first !== '?') {
    const since = (row: { created_at: number }) => new Date(row.created_at).toISOString() >= first;
    onDisk = onDisk.filter(since);
    switches = switches.filter(since);
  }
  const events = await skillLog(lines, onDisk, (id) => skills.proposal(id), switches);
  return { events: events.slice(-count).reverse() };
}

/** Skills a list shows at most (the library may hold thousands; a search narrows it). */
const LIST_LIMIT = 300;

/** The skills page: the library (searched when `q` is given), a page of LIST_LIMIT at a time, and the proposals waiting for review. */
export async function skillsListData(skills: SkillsPageReads, q: string, page = 1) {
  const rows = await skills.list();
  const query = q.trim();
  const matched = query === '' ? rows : searched(skills, rows, query);
  const pages = Math.max(1, Math.ceil(matched.length / LIST_LIMIT));
  const shownPage = Math.min(page, pages);
  return {
    generation: await skills.generation(),
    review: skills.review,
    total: rows.length,
    matched: matched.length,
    query,
    page: shownPage,
    pages,
    first: (shownPage - 1) * LIST_LIMIT + 1,
    skills: matched.slice((shownPage - 1) * LIST_LIMIT, shownPage * LIST_LIMIT).map(({ skill, credit }) => ({
      name: skill.name,
      category: skill.category,
      description: skill.description,
      version: skill.version,
      origin: skill.origin,
      updated_at: skill.updatedAt ?? null,
      credit: presentCredit(credit),
    })),
    proposals: (await skills.pending()).map((row) => withChanges(skills, presentProposal(row))),
    invalid_files: skills.problems(),
  };
}

/** What approving a proposal would change in the skill as it is now (a skill may have changed since it was proposed). */
function withChanges(skills: SkillsPageReads, proposal: ReturnType<typeof presentProposal>) {
  const current = skills.get(proposal.name);
  if (!current) return { ...proposal, current_version: null, patch: null };
  const shown = (skill: { description: string; category: string; body: string }) =>
    `description: ${skill.description}\ncategory: ${skill.category}\n\n${skill.body}\n`;
  const patch = createTwoFilesPatch(`${proposal.name}@v${current.version}`, `${proposal.name} (proposal #${proposal.id})`, shown(current), shown(proposal));
  return { ...proposal, current_version: current.version, patch };
}

/**
 * The library's own keyword index first (by its ranking: names, descriptions, bodies, search keys),
 * then any other skill whose name or description holds the text as typed.
 */
function searched(skills: SkillsPageReads, rows: Awaited<ReturnType<SkillsPageReads['list']>>, query: string) {
  const byName = new Map(rows.map((row) => [row.skill.name, row]));
  const ranked = skills.index.search(uniqueTerms(query)).map((hit) => byName.get(hit.name));
  const found = new Set(ranked.filter((row) => row !== undefined));
  const needle = query.toLowerCase();
  for (const row of rows) if (`${row.skill.name} ${row.skill.description}`.toLowerCase().includes(needle)) found.add(row);
  return [...found];
}

/** One skill: its text, versions, a diff between two of them (`from`/`to`, default the last change) and its figures. */
export async function skillDetailData(skills: SkillsPageReads, name: string, choice: { from?: number | undefined; to?: number | undefined }) {
  const skill = skills.get(name);
  const versions = await skills.versions(name);
  if (!skill && versions.length === 0) throw new NotFoundError(`No skill named ${name}.`, 'skill_not_found');
  const credit = await skills.creditOf(name);
  const text = skill ? await skills.text(skill) : null;
  return {
    name,
    exists: skill !== undefined,
    description: skill?.description ?? null,
    category: skill?.category ?? null,
    origin: skill?.origin ?? null,
    version: skill?.version ?? null,
    created_at: skill?.createdAt ?? null,
    updated_at: skill?.updatedAt ?? null,
    source_sessions: skill?.sourceSessions ?? [],
    body: skill?.body ?? null,
    // The file as it is on disk (a hand edit may not be a recorded version yet).
    text,
    tokens: skill?.bodyTokens ?? null,
    credit: presentCredit(credit),
    recent_sessions: await skills.recentSessions(name),
    versions: versions.map((row) => ({
      version: row.version,
      action: row.action,
      generation: row.generation,
      source: row.source,
      created_at: new Date(row.created_at).toISOString(),
    })),
    diff: versionDiff(name, versions, choice),
    pending_proposals: (await skills.pending()).filter((row) => row.name === name).map((row) => row.id),
  };
}

/** The chosen pair's diff, or why there is none (an unknown version is shown, not an error: the page stays usable). */
function versionDiff(name: string, versions: VersionRow[], choice: { from?: number | undefined; to?: number | undefined }) {
  if (versions.length === 0) return null;
  try {
    return { ...diffVersions(name, versions, choice), problem: null };
  } catch (error) {
    if (!(error instanceof SkillError)) throw error;
    return { from: choice.from ?? null, to: choice.to ?? null, patch: null, problem: error.message };
  }
}

export type SkillsListView = Awaited<ReturnType<typeof skillsListData>>;
export type SkillDetailView = Awaited<ReturnType<typeof skillDetailData>>;
export type SkillLogView = Awaited<ReturnType<typeof skillLogData>>;
