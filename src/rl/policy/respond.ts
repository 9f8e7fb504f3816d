import type { AssembledResponse, OpenAIChatChunk, OpenAIChatCompletion, OpenAIUsage, RequestFormat } from '../../types/index.js';
import {
  assembleOpenAIResponse,
  assistantToOpenAIMessage,
  encodeSse,
  isRecord,
  streamTranslator,
  translateAnswer,
  unixSeconds,
  type AnswerContext,
  type AssistantParts,
  type ClientSink,
  type SseEvent,
} from '../../upstream/index.js';

/**
 * A policy answer in the client's API. The policy's answer is built once as an OpenAI
 * chat.completion (or its chunks), and the proxy's own translation layer turns that into an
 * Anthropic message or a Responses API object, streamed or not, exactly as for an OpenAI upstream.
 */

export interface PolicyAnswerInput {
  clientFormat: RequestFormat;
  /** The request it answers, in the client's format (model name, stream options, Responses context). */
  context: AnswerContext;
  stream: boolean;
  id: string;
  model: string;
  parts: AssistantParts;
  finishReason: 'stop' | 'length' | 'tool_calls';
  promptTokens: number;
  completionTokens: number;
}

/** The bytes for the client: one JSON body, or a whole SSE event sequence. */
export interface PolicyAnswer {
  status: 200;
  contentType: 'application/json' | 'text/event-stream';
  body: string;
  /** For the turn record, as the forwarder assembles an upstream's answer. */
  assembled: AssembledResponse;
}

export function policyAnswer(input: PolicyAnswerInput): PolicyAnswer {
  const completion = openAICompletion(input);
  const assembled = assembleOpenAIResponse(completion);
  if (!input.stream) {
    const body = input.clientFormat === 'openai' ? completion : translateAnswer(input.clientFormat, 'openai', completion, input.context);
    return { status: 200, contentType: 'application/json', body: JSON.stringify(body), assembled };
  }
  return { status: 200, contentType: 'text/event-stream', body: streamBody(input), assembled };
}

/** Writes the answer to the client: headers, body, end. */
export function sendPolicyAnswer(sink: ClientSink, answer: PolicyAnswer): void {
  if (answer.contentType === 'application/json') {
    sink.sendComplete(answer.status, answer.contentType, answer.body);
    return;
  }
  sink.startStream(answer.status, answer.contentType);
  sink.write(answer.body);
  sink.end();
}

export function openAICompletion(input: PolicyAnswerInput): OpenAIChatCompletion {
  return {
    id: input.id,
    object: 'chat.completion',
    created: unixSeconds(),
    model: input.model,
    choices: [{ index: 0, message: assistantToOpenAIMessage(input.parts, { includeReasoning: true }), finish_reason: input.finishReason, logprobs: null }],
    usage: usageOf(input),
  };
}

function usageOf(input: PolicyAnswerInput): OpenAIUsage {
  return { prompt_tokens: input.promptTokens, completion_tokens: input.completionTokens, total_tokens: input.promptTokens + input.completionTokens };
}

function streamBody(input: PolicyAnswerInput): string {
  if (input.clientFormat === 'openai') {
    const options = input.context.body['stream_options'];
    const includeUsage = isRecord(options) && options['include_usage'] === true;
    return openAIChunkEvents(input, { includeUsage, usageFirst: false })
      .map((event) => encodeSse(event.data))
      .join('');
  }
  // Usage rides on the first chunk too, so Anthropic's message_start carries the input tokens.
  const translator = streamTranslator(input.clientFormat, 'openai', input.context);
  let out = '';
  for (const event of openAIChunkEvents(input, { includeUsage: true, usageFirst: true })) out += translator.push(event);
  return out + translator.finish();
}

/**
 * The answer as OpenAI streams one: a role chunk, the reasoning, the text, one chunk per tool
 * call (id, name and whole arguments), the finish reason, the usage chunk when asked, `[DONE]`.
 */
function openAIChunkEvents(input: PolicyAnswerInput, options: { includeUsage: boolean; usageFirst: boolean }): SseEvent[] {
  const created = unixSeconds();
  const usage = usageOf(input);
  const chunk = (delta: OpenAIChatChunk['choices'][number]['delta'], finishReason: string | null = null): OpenAIChatChunk => ({
    id: input.id,
    object: 'chat.completion.chunk',
    created,
    model: input.model,
    choices: [{ index: 0, delta, finish_reason: finishReason }],
  });
  const first = chunk({ role: 'assistant', content: '' });
  if (options.usageFirst) first.usage = usage;
  const chunks: OpenAIChatChunk[] = [first];
  if (input.parts.reasoning !== '') chunks.push(chunk({ reasoning_content: input.parts.reasoning }));
  if (input.parts.text !== '') chunks.push(chunk({ content: input.parts.text }));
  const message = assistantToOpenAIMessage(input.parts, { includeReasoning: false });
  (message.tool_calls ?? []).forEach((call, index) => {
    chunks.push(chunk({ tool_calls: [{ index, id: call.id, type: 'function', function: { name: call.function.name, arguments: call.function.arguments } }] }));
  });
  chunks.push(chunk({}, input.finishReason));
  if (options.includeUsage) chunks.push({ id: input.id, object: 'chat.completion.chunk', created, model: input.model, choices: [], usage });
  return [...chunks.map((value) => ({ event: undefined, data: JSON.stringify(value) })), { event: undefined, data: '[DONE]' }];
}
