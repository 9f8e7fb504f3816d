import { z } from 'zod';
import { CLIENT_PROFILES, type FinishedTurn, type IdentitySource, type SideRequestKind, type TurnType } from '../conversation/index.js';
import type { AssembledResponse, RequestFormat } from '../types/index.js';
import { assembleAnswer as assembleBody, readStream, type StreamEnding } from '../upstream/index.js';

/**
 * A turn as the journal keeps it (conversation/turn-journal.ts): the record's own fields, written
 * just before the client gets the end of its answer, with the request and the answer beside it as
 * raw bytes. A turn rebuilt from it after a crash has no forwarded body and no upstream details.
 */
export type TurnBase = TurnHead & KeptRequest;

/** The record's own fields that do not depend on the answer. */
export type TurnHead = Omit<
  FinishedTurn,
  'upstreamName' | 'upstreamFormat' | 'response' | 'status' | 'outcome' | 'error' | 'attempts' | 'firstByteMs' | 'durationMs' | 'payload'
>;

/** What the record's payload keeps of the request besides its body. */
export interface KeptRequest {
  receivedHeaders: Record<string, string>;
  strippedKeys: string[];
  injected: unknown;
}

export interface JournalHeader extends TurnBase {
  v: 1;
  status: number;
  durationMs: number;
}

const headerSchema = z.object({
  v: z.literal(1),
  id: z.string().min(1),
  sessionId: z.string().min(1),
  identitySource: z.enum(['header', 'body', 'runtime', 'fingerprint', 'none'] satisfies IdentitySource[]),
  lineage: z.string(),
  scope: z.string(),
  turnType: z.enum(['main', 'side'] satisfies TurnType[]),
  // Absent from entries journaled before client profiles.
  clientProfile: z.enum(['generic', ...CLIENT_PROFILES.map((profile) => profile.name)]).default('generic'),
  sideRequest: z
    .enum(['title', 'summary', 'compaction', 'memory', 'classifier', 'quota'] satisfies SideRequestKind[])
    .nullable()
    .default(null),
  clientFormat: z.enum(['openai', 'anthropic', 'responses'] satisfies RequestFormat[]),
  model: z.string().nullable(),
  stream: z.boolean(),
  query: z.string(),
  startedAt: z.number(),
  durationMs: z.number(),
  status: z.number().int(),
  startsNewConversation: z.boolean(),
  endsSession: z.boolean(),
  learning: z.boolean(),
  receivedHeaders: z.record(z.string(), z.string()),
  strippedKeys: z.array(z.string()),
  injected: z.unknown(),
  // Served from the RL policy: the exact sampled ids, so the recovered turn stays a trainable sample.
  // Ids that do not parse cost only themselves: the turn is still recovered, as text.
  policy: z
    .object({
      turnId: z.string(),
      sessionId: z.string(),
      promptTokens: z.array(z.number().int().nonnegative()),
      response: z.object({ tokens: z.array(z.number().int().nonnegative()), logprobs: z.array(z.number()), stopReason: z.enum(['stop', 'length']) }),
      policyVersion: z.string(),
      trainable: z.boolean(),
    })
    .optional()
    .catch(undefined),
});

/** The turn an earlier run journaled; undefined for an entry that does not parse (skipped). */
export function turnFromJournal(header: unknown, request: Buffer, answer: Buffer): FinishedTurn | undefined {
  const parsed = headerSchema.safeParse(header);
  if (!parsed.success) return undefined;
  const entry = parsed.data;
  const answered = entry.status >= 200 && entry.status < 300;
  const read = answered ? readAnswer(entry.clientFormat, entry.stream, answer) : undefined;
  const response = read?.response ?? null;
  // A stream the client got without its final event, or ended by an error event (the upstream's or the proxy's own), is no whole answer.
  const brokenStream = read?.ending !== undefined && read.ending.kind !== 'finished';
  const { v: _version, receivedHeaders, strippedKeys, injected, status, durationMs, policy, ...base } = entry;
  return {
    ...base,
    upstreamName: null,
    upstreamFormat: null,
    model: response?.model ?? base.model,
    response,
    status,
    outcome: !answered ? 'upstream_error' : brokenStream ? 'stream_broken' : 'ok',
    error: answered && !brokenStream ? null : `recovered from the turn journal after the proxy stopped abruptly; ${whatWentWrong(read?.ending)}`,
    attempts: 1,
    firstByteMs: null,
    durationMs,
    ...(policy ? { policy } : {}),
    payload: { received: { text: request.toString('utf8') }, injected: injected ?? null, forwarded: null, receivedHeaders, strippedKeys },
  };
}

/** The answer as the client got it (in the client's format), reduced for the record; a stream also says how it ended. */
function readAnswer(format: RequestFormat, stream: boolean, answer: Buffer): { response: AssembledResponse | null; ending?: StreamEnding } {
  if (stream) return readStream(format, answer);
  let body: unknown;
  try {
    body = JSON.parse(answer.toString('utf8'));
  } catch {
    return { response: null };
  }
  return { response: assembleBody(format, body) };
}

function whatWentWrong(ending: StreamEnding | undefined): string {
  if (ending?.kind === 'cut') return 'the stream ended without its final event';
  return ending?.kind === 'failed' ? 'the stream ended with an error event' : 'the answer was an error';
}
