import type { UpstreamTarget } from '../config/index.js';
import type { ConversationStore, UserLanguages } from '../conversation/index.js';
import { EmbeddingClient, type EmbeddingEndpoint } from '../embeddings/index.js';
import {
  LearningMisconfiguredError,
  parsePayload,
  resolveLearningTarget,
  type Enqueue,
  type JobContext,
  type JobHandler,
  type LearningEndpointConfig,
} from '../learning/index.js';
import type { Logger } from '../logging/index.js';
import { loadPrompt } from '../prompts/index.js';
import { StateStore, type Db } from '../store/index.js';
import type { CredentialMemory } from '../upstream/index.js';
import { SkillCreditStore, type SkillCredit } from './credit.js';
import { EVOLVE_JOB, SEARCH_KEYS_JOB, SEARCH_KEYS_LANGUAGES } from './recording.js';
import { evolvePayload } from './recording-rules.js';
import { askSkillSearchKeys, SkillSearchKeys } from './search-keys.js';
import { approvalOf, approvalSource } from './approval.js';
import type { PlannedChange, Rejected } from './evolution/apply.js';
import { evolutionRecord, nearestSkill, planSessionEvolution, type EvolutionPlan } from './evolution/session.js';
import { buildTranscript } from './evolution/transcript.js';
import { IN_SWITCHED_LIBRARY, ON_DISK, SkillHistory, type VersionAction } from './history.js';
import { revertDraft } from './revert.js';
import { skillInjectionReason } from './screen.js';
import { sameSkillContent } from './skill-file.js';
import { SkillLibrary } from './library.js';
import { SkillsContextProvider } from './provider.js';
import { ProposalStore, type ProposalRow } from './proposals.js';
import { SkillRetriever, type RetrievalMode } from './retrieval.js';
import { SkillSearchIndex } from './search-index.js';
import type { Skill, SkillDraft } from './types.js';
import { SkillVectors } from './vectors.js';
import { InternalError, SkillError } from '../errors.js';

export interface SkillsSettings {
  enabled: boolean;
  dir: string;
  retrievalMode: RetrievalMode;
  topK: number;
  fullBodyTopN: number;
  maxTokens: number;
  minRelevance: number;
  autoEvolve: boolean;
  /** skills.search_keys: the learning model writes search keys for the skills */
  searchKeys: boolean;
  evolveEveryNTurns: number;
  review: 'auto' | 'manual';
  maxNewSkills: number;
  embedding: EmbeddingEndpoint;
  evolver: Omit<LearningEndpointConfig, 'name'>;
}

export interface SkillsDependencies {
  db: Db;
  logger: Logger;
  settings: SkillsSettings;
  /** Present in the proxy; absent for CLI commands that only read or edit the library. */
  conversation?: ConversationStore;
  mainUpstream?: UpstreamTarget;
  credentials?: CredentialMemory;
  /** The languages the user writes requests in (the proxy has it): search keys are written in them. */
  languages?: UserLanguages;
}

export interface ChangeResult {
  skill: Skill;
  action: VersionAction;
  version: number;
  generation: number;
}

/** A person's save that holds what the current version already does: nothing written, no version, no generation. */
export interface UnchangedResult {
  skill: Skill;
  action: 'unchanged';
  version: number;
  generation: number;
}

/** What a person's save may refuse, in this order (so a command reports the first that applies). */
export interface SaveOptions {
  /** false: a skill of the same name that says something else is not replaced (`skill_exists`). Default: replaced, as an edit does. */
  overwrite?: boolean;
  /** Refuse text that reads like a prompt injection (`suspicious_skill`). Default: no, the caller screened it. */
  screen?: boolean;
}

export interface EvolutionResult {
  applied: ChangeResult[];
  proposed: number[];
  rejected: Rejected[];
}

/**
 * The skills part of MetaClaw: the library on disk, retrieval and injection, credit, versioned
 * changes with a generation counter, review, and evolution from sessions.
 */
export class SkillsService {
  readonly library: SkillLibrary;
  readonly index: SkillSearchIndex;
  readonly credit: SkillCreditStore;
  readonly history: SkillHistory;
  readonly proposals: ProposalStore;
  readonly retriever: SkillRetriever;
  readonly provider: SkillsContextProvider;
  private vectorStore: SkillVectors | undefined;
  readonly searchKeys: SkillSearchKeys;
  private readonly state: StateStore;
  private enqueue: Enqueue | undefined;
  /** Set once open() recorded what it read: the first scan's changes are recorded with the library's claim, not on their own. */
  private opened = false;

  constructor(private readonly deps: SkillsDependencies) {
    const { db, logger, settings } = deps;
    this.library = new SkillLibrary(settings.dir, logger);
    this.searchKeys = new SkillSearchKeys(db);
    this.index = new SkillSearchIndex((skill) => this.searchKeys.textOf(skill));
    this.credit = new SkillCreditStore(db);
    this.history = new SkillHistory(db, settings.dir);
    this.proposals = new ProposalStore(db);
    this.state = new StateStore(db);
    const embeddings = embeddingClient(settings);
    this.vectorStore = embeddings ? new SkillVectors(db, embeddings, logger) : undefined;
    this.retriever = new SkillRetriever(
      this.library,
      this.index,
      this.vectors,
      embeddings,
      { mode: settings.retrievalMode, topK: settings.topK, minRelevance: settings.minRelevance },
      logger,
    );
    this.provider = new SkillsContextProvider(
      this.retriever,
      { maxTokens: settings.maxTokens, fullBodyTopN: settings.fullBodyTopN },
      () => this.history.generation,
    );
    this.library.onChange((change) => {
      this.history.refresh();
      this.index.update(change.changed, change.removed);
      for (const name of change.removed) this.vectors?.forget(name);
      if (change.changed.length > 0) this.vectors?.refresh(() => this.library.all());
      if (change.changed.length > 0) this.queueSearchKeys();
      // Off the request path: on opening the library, and on the watcher's or the poll's rescan. Last,
      // and on its own: a database busy past its timeout leaves the change to be recorded before the
      // next write over it (keepEditOnDisk), never the index without the new text.
      if (change.scanned && this.opened)
        this.recordChangesOnDiskNow(
          change.changed.map((skill) => skill.name),
          change.removed,
        );
    });
  }

  get settings(): SkillsSettings {
    return this.deps.settings;
  }

  get vectors(): SkillVectors | undefined {
    return this.vectorStore;
  }

  /** Switches retrieval to `mode` with `embedding` (the proxy's start-up probe of the provider's embeddings endpoint decides). */
  useRetrieval(mode: RetrievalMode, embedding: EmbeddingEndpoint): void {
    this.deps.settings = { ...this.deps.settings, retrievalMode: mode, embedding };
    const embeddings = embeddingClient(this.deps.settings);
    this.vectorStore = embeddings ? new SkillVectors(this.deps.db, embeddings, this.deps.logger) : undefined;
    this.retriever.useEmbeddings(mode, this.vectorStore, embeddings);
    this.vectorStore?.refresh(() => this.library.all());
  }

  /** Loads the library and its index. `watch` keeps following hand edits (the proxy does; CLI commands don't). */
  open(options: { watch: boolean }): void {
    this.library.scan();
    this.index.sync(this.library.all());
    this.vectors?.refresh(() => this.library.all());
    // A skill folder deleted while nothing watched (the proxy stopped, between two commands): no scan sees it go.
    // Recorded with what the first scan read, and with a change of skills.dir (a library switch), as one change.
    this.recordChangesOnDiskNow(
      this.library.all().map((skill) => skill.name),
      this.history.liveNames(),
      true,
    );
    this.opened = true;
    if (options.watch) this.library.startWatching();
    this.queueSearchKeys();
  }

  /** The runner's enqueue, so a changed library gets search keys written. */
  attachQueue(enqueue: Enqueue): void {
    this.enqueue = enqueue;
  }

  close(): void {
    this.library.stopWatching();
  }

  /** The existing skill most similar to `text` by keywords. */
  nearest(text: string, excluding?: string): { skill: Skill; relevance: number } | undefined {
    return nearestSkill({ get: (name) => this.library.get(name), all: () => this.library.all(), index: this.index }, text, excluding);
  }

  /**
   * Writes a skill, records the version and bumps the generation (or joins `generation` when a
   * batch of changes — an import, an install — counts as one change of the library).
   */
  applyDraft(draft: SkillDraft, action: VersionAction, source: string, batch?: number): ChangeResult {
    return this.locked(() => {
      this.keepEditOnDisk(draft.name);
      const generation = batch ?? this.history.bumpGeneration();
      // Goes on from the last recorded version (after a removal, after an edit on disk): every version number names one text.
      const minVersion = (this.history.latest(draft.name)?.version ?? 0) + 1;
      const { after, text } = this.library.write(draft, { generation, minVersion });
      this.history.record({ name: after.name, version: after.version, action, content: text, generation, source });
      return { skill: after, action, version: after.version, generation };
    });
  }

  /**
   * Runs a write of the library holding the database's write lock, from its file to its version
   * row, so another process's rescan never reads the file before its version is recorded.
   */
  private locked<T>(work: () => T): T {
    return this.deps.db.transaction(work).immediate();
  }

  /**
   * A person's save (`skills add`, PUT /v1/skills/{name}): a new version, or nothing when the draft
   * says what the current version does (see sameSkillContent). Saving unchanged is common (a form
   * submitted as it was, a script that adds its skills on every run) and is no change of the library:
   * a new version would fill the history with copies and re-send the skills to every agent.
   */
  save(draft: SkillDraft, source: string, options: SaveOptions = {}): ChangeResult | UnchangedResult {
    const current = this.library.get(draft.name);
    const unchanged = current !== undefined && sameSkillContent(current, draft);
    // The same text again is nothing to overwrite: with or without leave to overwrite, it is "unchanged".
    if (current && !unchanged && options.overwrite === false) throw new SkillError(`a skill named ${draft.name} already exists`, 'skill_exists');
    const injection = options.screen ? skillInjectionReason(draft) : undefined;
    if (injection) throw new SkillError(`the skill reads like a prompt injection (${injection})`, 'suspicious_skill');
    if (current && unchanged) return { skill: current, action: 'unchanged', version: current.version, generation: this.history.generation };
    return this.applyDraft(draft, 'manual', source);
  }

  /** Writes an exact SKILL.md text (import, revert) as a new version. */
  applyText(name: string, text: string, action: VersionAction, source: string, batch?: number): ChangeResult {
    return this.locked(() => {
      const generation = batch ?? this.history.bumpGeneration();
      const skill = this.library.writeText(name, text);
      this.history.record({ name, version: skill.version, action, content: text, generation, source });
      return { skill, action, version: skill.version, generation };
    });
  }

  remove(name: string, source: string): { removed: boolean; generation: number } {
    const existing = this.library.get(name);
    if (!existing) return { removed: false, generation: this.history.generation };
    return this.locked(() => {
      this.keepEditOnDisk(name);
      this.library.remove(name);
      const generation = this.history.bumpGeneration();
      const version = Math.max(existing.version, this.history.latest(name)?.version ?? 0) + 1;
      this.history.record({ name, version, action: 'remove', content: '', generation, source });
      return { removed: true, generation };
    });
  }

  /**
   * Records a change made by hand in the skills folder as a version when the library reads it — on
   * opening (the proxy's start, each CLI command) and on the proxy's rescans, off the request path —
   * so it moves the generation (once for all the changes one scan read), `skills diff` and `skills
   * log` show it and `skills revert` goes back to the version before it: a SKILL.md edited (`manual`,
   * "edited on disk"), a skill folder put in (`manual`, "added on disk": its first text is kept) and
   * one deleted (`remove`, "deleted on disk"). Each is recorded once: a later scan finds it recorded.
   * A change no scan has read yet is recorded before a write goes over it.
   */
  private keepEditOnDisk(name: string): void {
    // The proxy's watcher may not have read the edit yet: what is written next starts from it.
    if (this.editedOnDisk(name) !== undefined) this.library.scan();
    this.recordChangesOnDisk([name], [name]);
  }

  /** recordChangesOnDisk for a scan: a database busy past its timeout only delays the record (logged). */
  private recordChangesOnDiskNow(changed: readonly string[], gone: readonly string[], opening = false): void {
    try {
      this.recordChangesOnDisk(changed, gone, opening);
    } catch (error) {
      this.deps.logger.warn({ err: error }, 'skills: a hand edit could not be recorded as a version now; it is recorded before anything writes over it');
    }
  }

  /** The text of `name`'s SKILL.md when it is not the version last recorded. */
  private editedOnDisk(name: string): string | undefined {
    const text = this.library.readText(name);
    return text === undefined || this.history.latest(name)?.content === text ? undefined : text;
  }

  /**
   * `changed`: skills a scan read; `names`: skills that may have been deleted from the folder;
   * `opening`: the library is opened, so skills.dir may name another folder than the generation
   * last described (history.claimLibrary): a library switch, one change with what it found.
   */
  private recordChangesOnDisk(changed: readonly string[], names: readonly string[], opening = false): void {
    const deleted = (name: string) => this.library.deletedFromFolder(name);
    // In memory and one stat each, before the lock: opening looks for every recorded skill, and most are there.
    let gone = names.filter(deleted);
    const claiming = opening && !this.history.describesItsFolder();
    if (!claiming && changed.length === 0 && gone.length === 0) return;
    // Checked and recorded holding the write lock, as every write of the library's own holds it
    // (see locked): two processes reading one change record it once, and a write of the CLI's that
    // the proxy's watcher reads is never taken for a hand edit.
    this.locked(() => {
      const { switched, newFolder } = claiming ? this.history.claimLibrary() : {};
      // The claim may have given this folder the versions that named none (the first open since they name one).
      if (claiming) gone = this.history.liveNames().filter(deleted);
      let generation = switched?.generation;
      const record = (name: string, version: number, action: VersionAction, content: string, source: string) => {
        generation ??= this.history.bumpGeneration();
        this.history.record({ name, version, action, content, generation, source });
      };
      for (const name of changed) {
        const text = this.editedOnDisk(name);
        const skill = this.library.get(name);
        if (text === undefined || skill === undefined) continue; // an invalid file: nothing a revert could restore
        const latest = this.history.latest(name);
        // A folder new to the history that the library switched to: its skills were there, not put in by hand.
        const first = newFolder ? IN_SWITCHED_LIBRARY : ON_DISK.added;
        const source = latest === undefined || latest.action === 'remove' ? first : ON_DISK.edited;
        record(name, latest ? Math.max(latest.version, skill.version) + 1 : skill.version, 'manual', text, source);
      }
      for (const name of gone) {
        const latest = this.history.latest(name);
        // Looked at again under the lock: the folder may have been put back meanwhile.
        if (latest === undefined || latest.action === 'remove' || !this.library.deletedFromFolder(name)) continue;
        record(name, latest.version + 1, 'remove', '', ON_DISK.deleted);
      }
    });
  }

  /** Restores an earlier version (by default the one before the current) as a new version. */
  revert(name: string, toVersion?: number): ChangeResult {
    // An edit on disk is recorded first, so it is the current version and the default goes back to the one before it.
    this.keepEditOnDisk(name);
    const current = this.library.get(name);
    const currentVersion = current && Math.max(current.version, this.history.latest(name)?.version ?? 0);
    const { draft, source } = revertDraft(name, currentVersion, this.history.versions(name), toVersion);
    return this.applyDraft(draft, 'revert', source);
  }

  /** Skills with their credit figures, for `skills list` and GET /v1/skills. */
  list(): Array<{ skill: Skill; credit: SkillCredit | undefined }> {
    const figures = this.credit.figures();
    return this.library
      .all()
      .sort((a, b) => a.name.localeCompare(b.name))
      .map((skill) => ({ skill, credit: figures.get(skill.name) }));
  }

  status() {
    return {
      enabled: this.settings.enabled,
      dir: this.settings.dir,
      count: this.library.size,
      generation: this.history.generation,
      retrieval_mode: this.settings.retrievalMode,
      embedded: this.vectors?.count ?? 0,
      invalid_files: this.library.problems(),
      pending_proposals: this.proposals.countPending(),
    };
  }

  /* ---------- search keys ---------- */

  searchKeysHandler(): JobHandler {
    return { kind: SEARCH_KEYS_JOB, usesLlm: true, run: (_payload, context) => this.writeSearchKeys(context) };
  }

  /** Queues the search keys job when some skill lacks keys in a language the user writes. */
  private queueSearchKeys(): void {
    const languages = this.deps.languages?.current ?? [];
    if (!this.enqueue || languages.length === 0 || !this.settings.searchKeys) return;
    if (this.searchKeys.pending(this.library.all(), languages, loadPrompt('skill-search-keys').version).length > 0)
      this.enqueue(SEARCH_KEYS_JOB, {}, { dedupeKey: SEARCH_KEYS_JOB, delayMs: 1_000, rerunIfRunning: true });
  }

  /**
   * Writes search keys for the skills that lack them in the languages the user writes (from the
   * recorded requests), a batch of skills per call, and indexes them with their skills.
   */
  private async writeSearchKeys(context: JobContext): Promise<void> {
    const { conversation, mainUpstream, credentials, languages } = this.deps;
    if (!mainUpstream || !credentials || !languages) throw new InternalError('search keys need the running proxy');
    // Queued before skills.search_keys was turned off.
    if (!this.settings.searchKeys) return;
    const seen = languages.refresh();
    this.state.set(SEARCH_KEYS_LANGUAGES, JSON.stringify(seen));
    const prompt = loadPrompt('skill-search-keys');
    const pending = this.searchKeys.pending(this.library.all(), seen, prompt.version);
    if (pending.length === 0) return;
    const target = resolveLearningTarget({ name: 'skill search keys', ...this.settings.evolver }, mainUpstream, credentials, conversation?.latestModel());
    if (!target) throw new LearningMisconfiguredError('no model for skill search keys: set rl.evolver_model or llm.model_id');
    const { written, asked: done } = await askSkillSearchKeys(context, target, prompt, pending);
    for (const { skill, language, keys } of written) this.searchKeys.save(skill, language, keys, prompt.version, target.model);
    // Re-indexed with their keys (a skill edited meanwhile was re-indexed by the edit).
    const current = done.map(({ skill }) => this.library.get(skill.name)).filter((skill): skill is Skill => skill?.contentHash !== undefined);
    this.index.update(current, []);
    // This job holds the key while it runs: the enqueue asks it to run once more.
    if (pending.length > done.length) this.enqueue?.(SEARCH_KEYS_JOB, {}, { dedupeKey: SEARCH_KEYS_JOB, rerunIfRunning: true });
    context.logger.info({ skills: done.length, languages: seen, remaining: pending.length - done.length }, 'skill search keys written');
  }

  /* ---------- evolution ---------- */

  evolveHandler(): JobHandler {
    return { kind: EVOLVE_JOB, usesLlm: true, run: (payload, context) => this.evolve(parsePayload(evolvePayload, payload, EVOLVE_JOB), context) };
  }

  private async evolve(payload: { sessionId: string; reason: string }, context: JobContext): Promise<void> {
    const { conversation, mainUpstream, credentials } = this.deps;
    if (!conversation || !mainUpstream || !credentials) throw new InternalError('evolution needs the running proxy');
    const watermarkKey = `skills.evolved_upto:${payload.sessionId}`;
    const after = Number(this.state.get(watermarkKey) ?? '0');
    const transcript = buildTranscript(conversation, payload.sessionId, after, this.credit.outcomesOfSession(payload.sessionId));
    if (!transcript) {
      context.logger.info({ session: payload.sessionId }, 'no new main turns to learn skills from');
      return;
    }
    const target = resolveLearningTarget({ name: 'skill evolver', ...this.settings.evolver }, mainUpstream, credentials, transcript.model);
    if (!target) throw new LearningMisconfiguredError('no model for the skill evolver: set rl.evolver_model or llm.model_id');
    const plan = await planSessionEvolution({
      library: { get: (name) => this.library.get(name), all: () => this.library.all(), index: this.index },
      transcript,
      target,
      sessionId: payload.sessionId,
      reason: payload.reason,
      maxChanges: this.settings.maxNewSkills,
      context,
    });
    const result = this.applyPlan(payload.sessionId, plan);
    this.state.set(watermarkKey, String(transcript.lastSeq));
    context.logger.info(
      {
        session: payload.sessionId,
        applied: result.applied.map((change) => `${change.action} ${change.skill.name} v${change.version}`),
        proposed: result.proposed,
        rejected: result.rejected,
      },
      'skill evolution finished',
    );
  }

  /** Applies (or, under manual review, proposes) an evolution's planned changes, and records it in the history. */
  private applyPlan(sessionId: string, plan: EvolutionPlan): EvolutionResult {
    const applied: ChangeResult[] = [];
    const proposed: number[] = [];
    for (const change of plan.planned) {
      if (this.settings.review === 'manual') proposed.push(this.proposals.add(sessionId, change));
      else applied.push(this.applyPlanned(change, `session ${sessionId}`));
    }
    if (applied.length > 0 || proposed.length > 0 || plan.rejected.length > 0)
      this.history.appendEvolution(evolutionRecord(sessionId, plan, { review: this.settings.review, applied, proposed }));
    return { applied, proposed, rejected: plan.rejected };
  }

  private applyPlanned(change: PlannedChange, source: string): ChangeResult {
    return this.applyDraft(change.draft, change.action, source);
  }

  /**
   * Applies a pending proposal (manual review). A skill changed since the proposal was made (a
   * person's edit, another approved proposal, a revert) gets the proposal merged in, never written
   * over: the change was drafted against a text that is no longer the current one.
   */
  approve(id: number): ChangeResult & { mergedInto?: number } {
    const proposal = this.proposals.get(id);
    if (!proposal || proposal.status !== 'pending') throw new SkillError(`no pending proposal #${id}`, 'proposal_not_found');
    this.keepEditOnDisk(proposal.name);
    const approval = approvalOf(proposal, this.library.get(proposal.name), this.history.latest(proposal.name)?.created_at);
    const result =
      approval.kind === 'already-held'
        ? { skill: approval.into, action: proposal.action, version: approval.into.version, generation: this.history.generation }
        : this.applyDraft(approval.draft, proposal.action, approvalSource(proposal));
    this.proposals.decide(id, 'approved');
    return approval.kind === 'as-proposed' ? result : { ...result, mergedInto: approval.into.version };
  }

  reject(id: number): ProposalRow {
    const proposal = this.proposals.get(id);
    if (!proposal || proposal.status !== 'pending') throw new SkillError(`no pending proposal #${id}`, 'proposal_not_found');
    this.proposals.decide(id, 'rejected');
    return { ...proposal, status: 'rejected' };
  }
}

/** The embeddings client the settings call for (none for keyword retrieval or without an endpoint). */
function embeddingClient(settings: SkillsSettings): EmbeddingClient | undefined {
  const { apiBase, apiKey, model } = settings.embedding;
  return apiBase && model && settings.retrievalMode !== 'template' ? new EmbeddingClient({ apiBase, apiKey, model }) : undefined;
}
