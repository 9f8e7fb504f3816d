import type pg from 'pg';
import { z } from 'zod';
import type { UpstreamTarget } from '../../config/index.js';
import { InternalError } from '../../errors.js';
import { LearningMisconfiguredError, parsePayload, resolveLearningTarget, type TeamJobHandler } from '../../learning/index.js';
import { evolutionRecord, planSessionEvolution, type EvolvingLibrary } from '../../skills/evolution/session.js';
import { buildTranscript, type TranscriptSource } from '../../skills/evolution/transcript.js';
import { EVOLVE_JOB, evolvePayload } from '../../skills/recording-rules.js';
import type { SkillsSettings } from '../../skills/service.js';
import type { CredentialMemory } from '../../upstream/credential-memory.js';
import type { PgConversationReads } from './conversation-reads.js';
import { PgSkillEvolutions } from './skill-evolutions.js';
import type { PgSkillProposals } from './skill-proposals.js';
import type { PgSkillStore } from './skill-store.js';
import { toPostgresText } from './text.js';

export interface PgSkillJobDeps {
  pool: pg.Pool;
  reads: PgConversationReads;
  skills: PgSkillStore;
  proposals: PgSkillProposals;
  /** The node's mirror of the team's skills: what the evolver is shown and plans against. */
  library: EvolvingLibrary;
  settings: Pick<SkillsSettings, 'review' | 'maxNewSkills' | 'evolver'>;
  mainUpstream: UpstreamTarget | undefined;
  credentials: CredentialMemory;
}

/** Main turns whose request bodies a transcript reads ahead (it is cut to its newest turns anyway). */
const READ_AHEAD_TURNS = 60;

const outcomeRows = z.array(z.object({ turn_id: z.string(), outcome: z.string().nullable(), judge_score: z.coerce.number().nullable() }));

/**
 * skills.evolve on the team store: the personal install's evolution (skills/evolution/session.ts)
 * over the session the team store recorded and the node's mirror of the team's skills. The changes
 * are written with the job (its effect), each in the generation order every node follows, so a
 * skill two nodes evolve at once keeps both edits (PgSkillStore.applyPlannedIn).
 */
export function pgSkillEvolveHandler(deps: PgSkillJobDeps): TeamJobHandler {
  return {
    kind: EVOLVE_JOB,
    usesLlm: true,
    async run(raw, context) {
      const payload = parsePayload(evolvePayload, raw, EVOLVE_JOB);
      const watermarkKey = `skills.evolved_upto:${payload.sessionId}`;
      const after = Number((await readState(deps.pool, watermarkKey)) ?? '0');
      const source = await readAhead(deps.reads, payload.sessionId, after);
      const transcript = buildTranscript(source, payload.sessionId, after, await outcomesOfSession(deps.pool, payload.sessionId));
      if (!transcript) {
        context.logger.info({ session: payload.sessionId }, 'no new main turns to learn skills from');
        return undefined;
      }
      const target = resolveLearningTarget({ name: 'skill evolver', ...deps.settings.evolver }, requireUpstream(deps), deps.credentials, transcript.model);
      if (!target) throw new LearningMisconfiguredError('no model for the skill evolver: set rl.evolver_model or llm.model_id');
      const plan = await planSessionEvolution({
        library: deps.library,
        transcript,
        target,
        sessionId: payload.sessionId,
        reason: payload.reason,
        maxChanges: deps.settings.maxNewSkills,
        context,
      });
      const review = deps.settings.review;
      return async (client) => {
        const proposed: number[] = [];
        let applied: Awaited<ReturnType<PgSkillStore['applyPlannedIn']>> = [];
        if (review === 'manual') for (const change of plan.planned) proposed.push(await deps.proposals.add(payload.sessionId, change, Date.now(), client));
        else
          applied = await deps.skills.applyPlannedIn(
            client,
            plan.planned.map((change) => ({ change, seenVersion: plan.seen.get(change.draft.name) })),
            `session ${payload.sessionId}`,
          );
        // Only ever forward: a job of an older run finishing late never makes a session be read again.
        await client.query(
          `INSERT INTO state (key, value) VALUES ($1, $2)
           ON CONFLICT (key) DO UPDATE SET value = GREATEST(state.value::bigint, excluded.value::bigint)::text`,
          [watermarkKey, String(transcript.lastSeq)],
        );
        // What the personal install appends to evolution_history.jsonl, logged in the team store with the changes (`skills log`).
        const evolution = evolutionRecord(payload.sessionId, plan, { review, applied, proposed });
        if (plan.planned.length > 0 || plan.rejected.length > 0) await PgSkillEvolutions.record(client, payload.sessionId, evolution);
        context.logger.info(
          { evolution, applied: applied.map((write) => `${write.action} ${write.skill.name} v${write.version}`) },
          'skill evolution finished',
        );
      };
    },
  };
}

function requireUpstream(deps: PgSkillJobDeps): UpstreamTarget {
  if (!deps.mainUpstream) throw new InternalError('evolution needs the running proxy');
  return deps.mainUpstream;
}

/** The session's turns and the request bodies of its newest main turns after `afterSeq` (tool results are read from them). */
async function readAhead(reads: PgConversationReads, sessionId: string, afterSeq: number): Promise<TranscriptSource> {
  const turns = await reads.turnsOfSession(sessionId);
  const bodies = new Map<string, unknown>();
  const wanted = turns.filter((turn) => turn.turn_type === 'main' && turn.seq > afterSeq).slice(-READ_AHEAD_TURNS);
  for (const turn of wanted) bodies.set(turn.id, await reads.receivedBody(turn.id));
  return { turnsOfSession: () => turns, receivedBody: (turnId) => bodies.get(turnId) ?? null };
}

async function outcomesOfSession(pool: pg.Pool, sessionId: string): Promise<Map<string, { outcome: string | null; judgeScore: number | null }>> {
  const result = await pool.query('SELECT turn_id, outcome, judge_score FROM turn_outcomes WHERE session_id = $1', [toPostgresText(sessionId)]);
  return new Map(outcomeRows.parse(result.rows).map((row) => [row.turn_id, { outcome: row.outcome, judgeScore: row.judge_score }]));
}

async function readState(pool: pg.Pool, key: string): Promise<string | undefined> {
  const result = await pool.query('SELECT value FROM state WHERE key = $1', [key]);
  return z.array(z.object({ value: z.string() })).parse(result.rows)[0]?.value;
}
