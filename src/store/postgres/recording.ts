import type pg from 'pg';
import { z } from 'zod';
import type { SessionEndedEvent, TurnRecordedEvent } from '../../conversation/types.js';
import type { DispatchHooks } from '../../learning/dispatch.js';
import type { EnqueueOptions } from '../../learning/job-model.js';
import type { Enqueue } from '../../learning/runner.js';
import { extractSessionJob, memoryShown, recordTurnJob } from '../../memory/recording-rules.js';
import { SEARCH_KEYS_JOB as MEMORY_SEARCH_KEYS_JOB, SEARCH_KEYS_LANGUAGES as MEMORY_SEARCH_KEYS_LANGUAGES } from '../../memory/service.js';
import type { RecordingSettings } from '../../runtime/recording.js';
import { isCorrection } from '../../skills/credit.js';
import {
  evolveAfterSession,
  evolveAfterTurn,
  judgesPreviousTurn,
  requestSearchKeysIfUncovered,
  SEARCH_KEYS_LANGUAGES,
  searchKeysLanguage,
  skillsShown,
} from '../../skills/recording-rules.js';
import { generationShown, JUDGE_JOB, type JudgeJobPayload } from '../../rl/buffer/recording.js';
import { GENERATION_KEY } from '../../skills/history.js';
import type { PgJobQueue } from './job-queue.js';
import { sampleRecording } from './rl-samples.js';

/**
 * The team store's recording listeners: what the SQLite ones (runtime/recording.ts) do for each
 * conversation event, on the recording transaction's client, so a turn, its credit rows and the
 * jobs it causes commit together. The decisions are the same functions (skills/recording-rules.ts,
 * memory/recording-rules.ts); only the reads and writes are PostgreSQL's.
 */
export interface PgConversationListener {
  turnRecorded?(client: pg.PoolClient, event: TurnRecordedEvent): Promise<void>;
  sessionEnded?(client: pg.PoolClient, event: SessionEndedEvent): Promise<void>;
}

/** Where the dispatch reports (as learning/dispatch.ts's hooks): a job was queued, a trigger's decision threw. */
export type PgDispatchHooks = DispatchHooks;

const NO_HOOKS: PgDispatchHooks = { enqueued: () => undefined, failed: () => undefined };

/**
 * The listeners in SQLite's order: the learning triggers (skills then memory), skill credit,
 * memory use. Build one set per sink; they hold only the queue and the settings.
 */
export function pgRecordingListeners(queue: PgJobQueue, settings: RecordingSettings, hooks: PgDispatchHooks = NO_HOOKS): PgConversationListener[] {
  const dispatch = new PgLearningDispatch(queue, settings, hooks);
  return settings.rlSamples ? [dispatch, new PgRlRecording(queue, hooks), skillCredit, memoryUse] : [dispatch, skillCredit, memoryUse];
}

interface JobRequest {
  kind: string;
  payload: unknown;
  options: EnqueueOptions | undefined;
}

/**
 * The learning triggers. A decision that throws costs its own jobs only, as on SQLite; a failed
 * enqueue statement fails the transaction (PostgreSQL aborts it anyway), so the turn is retried
 * with its jobs rather than recorded without them.
 */
class PgLearningDispatch implements PgConversationListener {
  constructor(
    private readonly queue: PgJobQueue,
    private readonly settings: RecordingSettings,
    private readonly hooks: PgDispatchHooks,
  ) {}

  async turnRecorded(client: pg.PoolClient, event: TurnRecordedEvent): Promise<void> {
    const language = searchKeysLanguage(event);
    const covered = language && this.settings.skills.searchKeys ? await readState(client, SEARCH_KEYS_LANGUAGES) : undefined;
    const memoryCovered =
      language && this.settings.memory.enabled && this.settings.memory.searchKeys ? await readState(client, MEMORY_SEARCH_KEYS_LANGUAGES) : undefined;
    const jobs = this.decide('skills', (enqueue) => {
      if (language && this.settings.skills.searchKeys) requestSearchKeysIfUncovered(language, covered, enqueue);
      evolveAfterTurn(event, this.settings.skills, enqueue);
    });
    jobs.push(
      ...this.decide('memory', (enqueue) => {
        recordTurnJob(event, this.settings.memory, enqueue);
        // Units written before the team wrote in this language get keys in it (as MemoryRecording does on SQLite).
        if (language && this.settings.memory.enabled && this.settings.memory.searchKeys)
          requestSearchKeysIfUncovered(language, memoryCovered, enqueue, MEMORY_SEARCH_KEYS_JOB);
      }),
    );
    await this.enqueueAll(client, jobs);
  }

  async sessionEnded(client: pg.PoolClient, event: SessionEndedEvent): Promise<void> {
    const jobs = this.decide('skills', (enqueue) => evolveAfterSession(event, this.settings.skills, enqueue));
    jobs.push(...this.decide('memory', (enqueue) => extractSessionJob(event, this.settings.memory, enqueue)));
    await this.enqueueAll(client, jobs);
  }

  /** The jobs one trigger's decision asks for (none when it throws, which the hooks hear of). */
  private decide(trigger: string, decision: (enqueue: Enqueue) => void): JobRequest[] {
    const jobs: JobRequest[] = [];
    try {
      decision((kind, payload, options) => void jobs.push({ kind, payload, options }));
    } catch (error) {
      this.hooks.failed(trigger, error);
      return [];
    }
    return jobs;
  }

  private async enqueueAll(client: pg.PoolClient, jobs: readonly JobRequest[]): Promise<void> {
    for (const job of jobs) {
      const id = await this.queue.enqueue(job.kind, job.payload, job.options, client);
      if (id !== undefined) this.hooks.enqueued(job.kind);
    }
  }
}

/**
 * RL samples (rl/buffer/recording.ts's RlRecording) on the team store: a main turn answered without
 * error becomes a sample tagged with the skill generation it was served under; the session's next
 * main turn (or its end) queues the judge for it. A sample and its judge job commit with the turn,
 * and the judge job's dedupe key keeps a turn from being queued twice by two nodes.
 */
class PgRlRecording implements PgConversationListener {
  constructor(
    private readonly queue: PgJobQueue,
    private readonly hooks: PgDispatchHooks,
  ) {}

  async turnRecorded(client: pg.PoolClient, event: TurnRecordedEvent): Promise<void> {
    if (event.turnType !== 'main') return;
    for (const turnId of await sampleRecording.waitingOfSession(client, event.sessionId)) await this.queueJudge(client, turnId, event.turnId);
    if (event.outcome !== 'ok') return;
    const generation = generationShown(event.injected) ?? Number((await readState(client, GENERATION_KEY)) ?? '0');
    await sampleRecording.record(client, {
      turnId: event.turnId,
      sessionId: event.sessionId,
      seq: event.seq,
      skillGeneration: generation,
      policy: event.policy,
      createdAt: Date.now(),
    });
  }

  async sessionEnded(client: pg.PoolClient, event: SessionEndedEvent): Promise<void> {
    for (const turnId of await sampleRecording.waitingOfSession(client, event.sessionId)) await this.queueJudge(client, turnId, null);
  }

  private async queueJudge(client: pg.PoolClient, turnId: string, nextTurnId: string | null): Promise<void> {
    if (!(await sampleRecording.queueForJudge(client, turnId, nextTurnId))) return;
    const payload: JudgeJobPayload = { turnId };
    const id = await this.queue.enqueue(JUDGE_JOB, payload, { dedupeKey: `${JUDGE_JOB}:${turnId}`, idempotencyKey: `${JUDGE_JOB}:${turnId}` }, client);
    if (id !== undefined) this.hooks.enqueued(JUDGE_JOB);
  }
}

/** Skill credit (skills/credit.ts's recordUsage and recordFollowUp): which skills a turn showed, and the verdict on the previous main turn. */
const skillCredit: PgConversationListener = {
  async turnRecorded(client, event) {
    const shown = skillsShown(event.injected);
    if (shown.length > 0) {
      const now = Date.now();
      await client.query(
        `INSERT INTO skill_usage (turn_id, session_id, skill, rank, relevance, full_body, created_at)
         SELECT $1, $2, skill, rank - 1, relevance, full_body, $6 FROM unnest($3::text[], $4::float8[], $5::int[]) WITH ORDINALITY AS shown(skill, relevance, full_body, rank)
         ON CONFLICT DO NOTHING`,
        [
          event.turnId,
          event.sessionId,
          shown.map((skill) => skill.name),
          shown.map((skill) => skill.relevance),
          shown.map((skill) => (skill.full ? 1 : 0)),
          now,
        ],
      );
    }
    if (!judgesPreviousTurn(event)) return;
    const previous = await client.query("SELECT id FROM turns WHERE session_id = $1 AND turn_type = 'main' AND seq < $2 ORDER BY seq DESC LIMIT 1", [
      event.sessionId,
      event.seq,
    ]);
    const previousId = z.array(z.object({ id: z.string() })).parse(previous.rows)[0]?.id;
    if (previousId === undefined) return;
    const corrected = isCorrection(event.query);
    await client.query(
      `INSERT INTO turn_outcomes (turn_id, session_id, outcome, evidence, updated_at) VALUES ($1, $2, $3, $4, $5)
       ON CONFLICT (turn_id) DO UPDATE SET outcome = excluded.outcome, evidence = excluded.evidence, updated_at = excluded.updated_at`,
      [previousId, event.sessionId, corrected ? 'corrected' : 'accepted', corrected ? event.query.slice(0, 300) : null, Date.now()],
    );
  },
};

/** Memory use (memory/store.ts's touch): the units a turn recalled were used once more. */
const memoryUse: PgConversationListener = {
  async turnRecorded(client, event) {
    const recalled = memoryShown(event.injected);
    if (recalled.length === 0) return;
    const now = Date.now();
    // One statement per occurrence, as SQLite counts a unit recalled twice twice.
    for (const id of recalled) await client.query('UPDATE memory_units SET access_count = access_count + 1, last_accessed_at = $1 WHERE id = $2', [now, id]);
  },
};

async function readState(client: pg.PoolClient, key: string): Promise<string | undefined> {
  const result = await client.query('SELECT value FROM state WHERE key = $1', [key]);
  return z.array(z.object({ value: z.string() })).parse(result.rows)[0]?.value;
}
