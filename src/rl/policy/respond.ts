import type { AssembledResponse, OpenAIChatCompletion, RequestFormat } from '../../types/index.js';
import {
  answerAsStream,
  assembleOpenAIResponse,
  assistantToOpenAIMessage,
  translateAnswer,
  unixSeconds,
  wholeAnswerUsage,
  type AnswerContext,
  type AssistantParts,
  type ClientSink,
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
  return { status: 200, contentType: 'text/event-stream', body: answerAsStream(input.clientFormat, input.context, input), assembled };
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
    usage: wholeAnswerUsage(input),
  };
}
