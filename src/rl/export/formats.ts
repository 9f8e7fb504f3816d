import { createHash } from 'node:crypto';
import type { ConversationStore, TurnDetail } from '../../conversation/index.js';
import type { RequestFormat } from '../../types/index.js';
import { translateRequest } from '../../upstream/index.js';
import type { RlSample } from '../types.js';

export const EXPORT_FORMATS = ['datum', 'sft', 'dpo', 'kto'] as const;
export type ExportFormat = (typeof EXPORT_FORMATS)[number];

/** A chat message as OpenAI-style trainers (TRL, Unsloth) read them. */
export interface ChatMessage {
  role: string;
  content: unknown;
  tool_calls?: Array<{ id: string; type: 'function'; function: { name: string; arguments: string } }>;
  [key: string]: unknown;
}

/** Tinker's Datum on the JSON wire: the model input, and the loss inputs as TensorData aligned to it. */
export interface TinkerDatumLine {
  model_input: { chunks: Array<{ type: 'encoded_text'; tokens: number[] }> };
  loss_fn_inputs: {
    target_tokens: { data: number[]; dtype: 'int64'; shape: [number] };
    logprobs: { data: number[]; dtype: 'float32'; shape: [number] };
    advantages: { data: number[]; dtype: 'float32'; shape: [number] };
  };
}

/**
 * One sample as a Tinker datum (MetaClaw's `sample_to_datum`): input = prompt + response minus the
 * last token, targets shifted by one, the sampled logprobs and the advantage on response positions,
 * zeros on the prompt. The advantage is the judge's reward as is: normalise it in the trainer.
 */
export function datumLine(sample: RlSample, advantage: number): TinkerDatumLine {
  const all = [...sample.promptTokens, ...sample.responseTokens];
  const length = all.length - 1;
  const promptPositions = sample.promptTokens.length - 1;
  const logprobs = [...new Array<number>(promptPositions).fill(0), ...sample.responseLogprobs].slice(0, length);
  const advantages = [...new Array<number>(promptPositions).fill(0), ...sample.responseTokens.map(() => advantage)].slice(0, length);
  return {
    model_input: { chunks: [{ type: 'encoded_text', tokens: all.slice(0, -1) }] },
    loss_fn_inputs: {
      target_tokens: { data: all.slice(1), dtype: 'int64', shape: [length] },
      logprobs: { data: logprobs, dtype: 'float32', shape: [length] },
      advantages: { data: advantages, dtype: 'float32', shape: [length] },
    },
  };
}

/** What a turn's prompt and answer look like as chat messages. */
export interface ChatTurn {
  prompt: ChatMessage[];
  answer: ChatMessage;
  /** a hash of the prompt: turns with the same one can form preference pairs */
  promptKey: string;
}

/**
 * A recorded turn as chat messages: the prompt the model answered (the body sent upstream, so
 * MetaClaw's context block is in its system prompt; the received body when that is all there is),
 * translated to OpenAI chat form whatever the wire format was, and the answer with its tool calls.
 * A turn whose bodies are past retention keeps only the user's request.
 */
export function chatTurn(conversation: ConversationStore, turnId: string): ChatTurn | undefined {
  const turn = conversation.getTurn(turnId);
  if (!turn) return undefined;
  const prompt = promptMessages(turn);
  const calls = turn.tool_calls ? (JSON.parse(turn.tool_calls) as Array<{ id: string; name: string; arguments: string }>) : [];
  const answer: ChatMessage = {
    role: 'assistant',
    content: turn.response_text ?? '',
    ...(calls.length > 0
      ? { tool_calls: calls.map((call) => ({ id: call.id, type: 'function' as const, function: { name: call.name, arguments: call.arguments } })) }
      : {}),
  };
  return { prompt, answer, promptKey: createHash('sha256').update(JSON.stringify(prompt)).digest('hex') };
}

function promptMessages(turn: TurnDetail): ChatMessage[] {
  const forwarded = isObject(turn.forwarded) ? { body: turn.forwarded, format: (turn.upstream_format ?? turn.client_format) as RequestFormat } : undefined;
  const received = isObject(turn.received) ? { body: turn.received, format: turn.client_format as RequestFormat } : undefined;
  const source = forwarded ?? received;
  if (source) {
    try {
      const chat = translateRequest(source.format, 'openai', source.body, { defaultMaxTokens: 1 });
      if (Array.isArray(chat['messages'])) return chat['messages'] as ChatMessage[];
    } catch {
      // a body the translators cannot read: fall back to the request text
    }
  }
  return [{ role: 'user', content: turn.query ?? '' }];
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
