import type pg from 'pg';
import type { UpstreamTarget } from '../../config/index.js';
import type { TurnRow } from '../../conversation/types.js';
import { parsePayload, type JobContext } from '../../learning/runner.js';
import type { TeamJobEffect, TeamJobHandler } from '../../learning/team-job.js';
import type { Logger } from '../../logging/index.js';
import { EXTRACT_JOB, extractPayload, RECORD_TURN_JOB, recordTurnPayload } from '../../memory/recording-rules.js';
import { rawContent, type MemoryConversation, type MemorySettings, type RelatedRecall } from '../../memory/service.js';
import type { GlossaryLanguage } from '../../text/index.js';
import type { CredentialMemory } from '../../upstream/index.js';
import type { PgConversationReads } from './conversation-reads.js';
import type { PgJobQueue } from './job-queue.js';
import { PgMemorySearch } from './memory-search.js';
import { searchRecall, type PgMemoryVectors } from './memory-vectors.js';
import { lockScope, MemoryWorkspace } from './memory-workspace.js';
import { pgRecallStore } from './recall-store.js';
import { ReplayedReads } from './replayed-reads.js';

export interface PgMemoryJobsOptions {
  readonly pool: pg.Pool;
  /** Where jobs the memory jobs cause go (record_turn queues extraction), in the completing transaction. */
  readonly queue: PgJobQueue;
  /** The conversation record: the turn record_turn stores, the session's model extraction defaults to. */
  readonly reads: PgConversationReads;
  readonly settings: MemorySettings;
  /** The extractor's default upstream (and the credentials clients sent it): without them, extraction has no model. */
  readonly mainUpstream?: UpstreamTarget;
  readonly credentials?: CredentialMemory;
  /** Languages besides English the members write in: extraction's recall also searches translations, as requests' recall does. */
  readonly languages?: () => readonly GlossaryLanguage[];
  readonly logger: Logger;
  /** The store's memory vectors, when this node uses them (pgvector installed, embeddings configured): hybrid recall, and new units embedded. */
  readonly vectors?: PgMemoryVectors;
}

/**
 * The team store's memory jobs (memory.record_turn and memory.extract, queued with each recorded
 * turn by pgRecordingListeners): each reads the turn or model it needs from the team store, runs
 * the personal install's own job in a MemoryWorkspace seeded from the team store, and returns
 * what the job changed there as the effect the runner writes when it completes the job.
 */
export function pgMemoryJobHandlers(options: PgMemoryJobsOptions): TeamJobHandler[] {
  const search = new PgMemorySearch(options.pool);
  const recall = teamRecall(options, search);
  return [
    {
      kind: RECORD_TURN_JOB,
      usesLlm: false,
      run: async (payload, context) => {
        const job = parsePayload(recordTurnPayload, payload, RECORD_TURN_JOB);
        const turn = await options.reads.getTurnSummary(job.turnId);
        if (!turn) return undefined; // pruned meanwhile
        // No LLM and tens of milliseconds of work: done whole in the completing transaction, after taking
        // the scope's lock, so what it reads cannot change before it writes (never stale, never retried
        // for another node's write), and turns of one scope are stored one at a time, as on SQLite.
        return async (client) => {
          await lockScope(client, job.scope);
          const workspace = await openWorkspace(options, job, jobConversation(turn, undefined), client, { turnText: rawContent(turn.query ?? '') });
          try {
            await runHandler(workspace, RECORD_TURN_JOB, job, context);
            await workspace.write(client, options.queue, search);
          } finally {
            workspace.close();
          }
        };
      },
    },
    {
      kind: EXTRACT_JOB,
      usesLlm: true,
      run: async (payload, context) => {
        const job = parsePayload(extractPayload, payload, EXTRACT_JOB);
        const model = await options.reads.lastModelOf(job.sessionId);
        return inWorkspace(options, search, {
          kind: EXTRACT_JOB,
          payload: job,
          context,
          conversation: jobConversation(undefined, model),
          recall,
          // An extraction reads turns up to its watermark: a turn recorded while the extractor thinks waits for the next one, as on SQLite.
          laterTurns: true,
        });
      },
    },
  ];
}

interface WorkspaceJob {
  kind: string;
  payload: { scope: string; sessionId: string };
  context: JobContext;
  conversation: MemoryConversation;
  recall?: RelatedRecall;
  laterTurns?: boolean;
}

/** Runs the personal install's handler of `job.kind` in a workspace of the job's scope and session; its changes as an effect. */
async function inWorkspace(options: PgMemoryJobsOptions, search: PgMemorySearch, job: WorkspaceJob): Promise<TeamJobEffect | undefined> {
  const workspace = await openWorkspace(options, job.payload, job.conversation, options.pool, job);
  try {
    await runHandler(workspace, job.kind, job.payload, job.context);
    return await workspace.effect(options.queue, search);
  } finally {
    workspace.close();
  }
}

function openWorkspace(
  options: PgMemoryJobsOptions,
  payload: { scope: string; sessionId: string },
  conversation: MemoryConversation,
  db: Pick<pg.Pool, 'query'>,
  extra: { recall?: RelatedRecall; laterTurns?: boolean; turnText?: string } = {},
): Promise<MemoryWorkspace> {
  return MemoryWorkspace.open(
    {
      pool: options.pool,
      scope: payload.scope,
      sessionId: payload.sessionId,
      settings: options.settings,
      logger: options.logger,
      conversation,
      ...(options.mainUpstream ? { mainUpstream: options.mainUpstream } : {}),
      ...(options.credentials ? { credentials: options.credentials } : {}),
      ...(extra.recall ? { recall: extra.recall } : {}),
      laterTurns: extra.laterTurns ?? false,
      ...(extra.turnText === undefined ? {} : { turnText: extra.turnText }),
      ...(options.vectors ? { vectors: options.vectors } : {}),
    },
    db,
  );
}

async function runHandler(workspace: MemoryWorkspace, kind: string, payload: unknown, context: JobContext): Promise<void> {
  const handler = workspace.service.handlers().find((candidate) => candidate.kind === kind);
  if (!handler) throw new Error(`MemoryService has no handler of ${kind}`);
  await handler.run(payload, context);
}

/**
 * The conversation record as a workspace job sees it: the rows read from the team store before it
 * runs. Forgetting (which scrubs turns) is not a job, so nothing is ever scrubbed here.
 */
function jobConversation(turn: TurnRow | undefined, model: string | undefined): MemoryConversation {
  return {
    getTurnSummary: (id) => (turn?.id === id ? turn : undefined),
    lastModelOf: () => model,
    latestModel: () => model,
    scrubTexts: () => 0,
    scrubInjected: () => 0,
  };
}

/** Recall over the whole team store, ranked as requests' recall ranks it (the SQLite code, over PostgreSQL reads). */
function teamRecall(options: PgMemoryJobsOptions, search: PgMemorySearch): RelatedRecall {
  return async (request) => {
    const reads = new ReplayedReads();
    const store = pgRecallStore(reads, search, options.pool);
    return searchRecall(
      { reads, store, vectors: options.vectors, mode: options.settings.retrievalMode, logger: options.logger, languages: options.languages },
      request,
    );
  };
}
