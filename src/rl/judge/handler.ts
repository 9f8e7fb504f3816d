import { z } from 'zod';
import type { UpstreamTarget } from '../../config/index.js';
import type { ConversationStore, TurnRow } from '../../conversation/index.js';
import {
  callPromptForText,
  LearningMisconfiguredError,
  PermanentJobError,
  resolveLearningTarget,
  type JobContext,
  type JobHandler,
  type LearningEndpointConfig,
  type LlmTarget,
} from '../../learning/index.js';
import { loadPrompt } from '../../prompts/index.js';
import type { SkillCreditStore } from '../../skills/index.js';
import type { CredentialMemory } from '../../upstream/index.js';
import { JUDGE_JOB } from '../buffer/recording.js';
import type { RlBuffer, Verdict } from '../buffer/store.js';
import type { JudgeScore } from '../types.js';
import { majorityOf, parseScore } from './parse.js';

/** Where the judge's calls go and how many votes it casts (rl.prm_*). */
export interface JudgeSettings {
  /** rl.prm_url, rl.prm_api_key, rl.prm_model; an empty apiBase means the main upstream */
  endpoint: LearningEndpointConfig;
  /** rl.prm_m */
  votes: number;
}

export interface JudgeDependencies {
  buffer: RlBuffer;
  credit: SkillCreditStore;
  conversation: ConversationStore;
  mainUpstream: UpstreamTarget;
  credentials: CredentialMemory;
  settings: JudgeSettings;
}

const payloadSchema = z.object({ turnId: z.string().min(1) });

/** Where the judge's calls go, in words (status, doctor). */
export function describeJudge(settings: JudgeSettings): { endpoint: string; model: string; votes: number } {
  const { apiBase, model } = settings.endpoint;
  return {
    endpoint: apiBase || 'the main upstream (rl.prm_url and rl.prm_api_key are not set)',
    model: model || "the main upstream's model",
    votes: settings.votes,
  };
}

/** Each text the judge sees is cut to this many characters (its head and tail). */
const MAX_TEXT = 6_000;
/** MetaClaw's sampling for the judge: temperature 0.6, up to 1024 tokens. */
const SAMPLING = { maxTokens: 1_024, temperature: 0.6 };

/**
 * The judge (MetaClaw's PRM): scores one main turn in {-1, 0, 1} by `votes` independent calls and
 * a majority of all of them. A tie (or too few usable votes) stores no reward rather than a fake 0;
 * a failed judge stores no reward and the job is retried. A score is also the turn's credit for the
 * skills shown in it.
 */
export class JudgeHandler implements JobHandler {
  readonly kind = JUDGE_JOB;
  readonly usesLlm = true;

  constructor(private readonly deps: JudgeDependencies) {}

  async run(payload: unknown, context: JobContext): Promise<void> {
    const parsed = payloadSchema.safeParse(payload);
    if (!parsed.success) throw new PermanentJobError(`bad judge job payload: ${parsed.error.issues[0]?.message}`);
    const { buffer, conversation } = this.deps;
    const sample = buffer.get(parsed.data.turnId);
    if (!sample || sample.judge_state === 'scored' || sample.judge_state === 'tie') return;
    const turn = conversation.getTurnSummary(sample.turn_id);
    if (!turn) {
      buffer.saveVerdict(sample.turn_id, { state: 'failed', reward: null, votes: [], model: '', error: 'the turn record is gone' });
      return;
    }
    const next = sample.next_turn_id ? conversation.getTurnSummary(sample.next_turn_id) : undefined;
    const target = this.target(turn.model ?? undefined);
    if (!target) throw new LearningMisconfiguredError('no model for the RL judge: set rl.prm_model (or llm.model_id)');
    const { verdict, failure } = await judgeTurn(context, target, turn, next, this.deps.settings.votes);
    buffer.saveVerdict(sample.turn_id, verdict);
    if (verdict.reward !== null) this.deps.credit.recordJudgeScore(sample.turn_id, sample.session_id, verdict.reward);
    // No majority because calls failed: the outage may pass, so the job runs again (the sample has no reward meanwhile).
    if (failure !== undefined) throw failure;
  }

  private target(sessionModel: string | undefined): LlmTarget | undefined {
    return resolveLearningTarget(this.deps.settings.endpoint, this.deps.mainUpstream, this.deps.credentials, sessionModel);
  }
}

/**
 * The judge's votes on one turn and their verdict (both engines' judge jobs call this): `votes`
 * independent calls, a majority of all of them. `failure` is set when there is no majority because
 * calls failed — the job should run again — and is the first call's error.
 */
export async function judgeTurn(
  context: JobContext,
  target: LlmTarget,
  turn: TurnRow,
  next: TurnRow | undefined,
  voteCount: number,
): Promise<{ verdict: Verdict; failure?: Error }> {
  const values = {
    instruction: clip(turn.query ?? ''),
    response: clip(responseText(turn)),
    next_state: next ? clip(next.query ?? '') : '(none: the session ended after this turn)',
  };
  const prompt = loadPrompt('rl-judge');
  const calls = await Promise.allSettled(Array.from({ length: voteCount }, () => callPromptForText(context, target, prompt, values, SAMPLING)));
  const votes: Array<JudgeScore | null> = calls.map((call) => (call.status === 'fulfilled' ? (parseScore(call.value.text) ?? null) : null));
  const failures = calls.flatMap((call) => (call.status === 'rejected' ? [call.reason as unknown] : []));
  const reward = majorityOf(votes);
  const verdict: Verdict = {
    state: reward !== null ? 'scored' : failures.length === 0 && votes.some((vote) => vote !== null) ? 'tie' : 'failed',
    reward,
    votes,
    model: target.model,
    error:
      failures.length > 0
        ? String((failures[0] as Error).message ?? failures[0]).slice(0, 300)
        : votes.every((vote) => vote === null)
          ? 'no vote held a score'
          : null,
  };
  context.logger.info({ turn: turn.id, votes, reward, state: verdict.state }, 'RL judge scored a turn');
  if (reward !== null || failures.length === 0) return { verdict };
  const first = failures[0];
  return { verdict, failure: first instanceof Error ? first : new Error(String(first)) };
}

/** What the assistant answered: its text and the tool calls it made. */
function responseText(turn: TurnRow): string {
  const calls = turn.tool_calls ? (JSON.parse(turn.tool_calls) as Array<{ name: string; arguments: string }>) : [];
  const parts = [turn.response_text ?? '', ...calls.map((call) => `[tool call] ${call.name}(${call.arguments})`)].filter((part) => part !== '');
  return parts.length > 0 ? parts.join('\n') : '(empty answer)';
}

/** The head and tail of a long text, and the markers the prompt uses to fence data neutralised. */
function clip(text: string): string {
  const fenced = text.replaceAll('<<<', '‹‹‹').replaceAll('>>>', '›››');
  if (fenced.length <= MAX_TEXT) return fenced;
  const half = MAX_TEXT / 2;
  return `${fenced.slice(0, half)}\n[… ${fenced.length - MAX_TEXT} characters left out …]\n${fenced.slice(-half)}`;
}
