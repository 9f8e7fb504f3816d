import type { OpenAIChatChunk, OpenAIUsage, RequestFormat } from '../../types/index.js';
import { encodeSse, type SseEvent } from '../sse.js';
import { assistantToOpenAIMessage, type AssistantParts } from './assistant.js';
import { isRecord, unixSeconds } from './common.js';
import { streamTranslator, type AnswerContext } from './format-pairs.js';

/** A whole answer, to be sent as a stream: the RL policy's, or an upstream's that answered a stream request with one JSON body. */
export interface WholeAnswer {
  id: string;
  model: string;
  parts: AssistantParts;
  finishReason: string;
  promptTokens: number;
  completionTokens: number;
}

/**
 * A whole answer as the event stream of the client's API: built as OpenAI chunks, and turned into
 * Anthropic or Responses events by the proxy's own stream translation, as an OpenAI upstream's are.
 */
export function answerAsStream(clientFormat: RequestFormat, context: AnswerContext, answer: WholeAnswer): string {
  if (clientFormat === 'openai') {
    const options = context.body['stream_options'];
    const includeUsage = isRecord(options) && options['include_usage'] === true;
    return openAIChunkEvents(answer, { includeUsage, usageFirst: false })
      .map((event) => encodeSse(event.data))
      .join('');
  }
  // Usage rides on the first chunk too, so Anthropic's message_start carries the input tokens.
  const translator = streamTranslator(clientFormat, 'openai', context);
  let out = '';
  for (const event of openAIChunkEvents(answer, { includeUsage: true, usageFirst: true })) out += translator.push(event);
  return out + translator.finish();
}

/** The answer's token counts as OpenAI's usage object. */
export function wholeAnswerUsage(answer: Pick<WholeAnswer, 'promptTokens' | 'completionTokens'>): OpenAIUsage {
  return { prompt_tokens: answer.promptTokens, completion_tokens: answer.completionTokens, total_tokens: answer.promptTokens + answer.completionTokens };
}

/**
 * The answer as OpenAI streams one: a role chunk, the reasoning, the text, one chunk per tool
 * call (id, name and whole arguments), the finish reason, the usage chunk when asked, `[DONE]`.
 */
function openAIChunkEvents(answer: WholeAnswer, options: { includeUsage: boolean; usageFirst: boolean }): SseEvent[] {
  const created = unixSeconds();
  const usage = wholeAnswerUsage(answer);
  const chunk = (delta: OpenAIChatChunk['choices'][number]['delta'], finishReason: string | null = null): OpenAIChatChunk => ({
    id: answer.id,
    object: 'chat.completion.chunk',
    created,
    model: answer.model,
    choices: [{ index: 0, delta, finish_reason: finishReason }],
  });
  const first = chunk({ role: 'assistant', content: '' });
  if (options.usageFirst) first.usage = usage;
  const chunks: OpenAIChatChunk[] = [first];
  if (answer.parts.reasoning !== '') chunks.push(chunk({ reasoning_content: answer.parts.reasoning }));
  if (answer.parts.text !== '') chunks.push(chunk({ content: answer.parts.text }));
  const message = assistantToOpenAIMessage(answer.parts, { includeReasoning: false });
  (message.tool_calls ?? []).forEach((call, index) => {
    chunks.push(chunk({ tool_calls: [{ index, id: call.id, type: 'function', function: { name: call.function.name, arguments: call.function.arguments } }] }));
  });
  chunks.push(chunk({}, answer.finishReason));
  if (options.includeUsage) chunks.push({ id: answer.id, object: 'chat.completion.chunk', created, model: answer.model, choices: [], usage });
  return [...chunks.map((value) => ({ event: undefined, data: JSON.stringify(value) })), { event: undefined, data: '[DONE]' }];
}
