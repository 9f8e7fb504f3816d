import type { ServerResponse } from 'node:http';
import { anthropicReply, json, openAIReply, type Handler, type RecordedRequest } from './upstream.js';

/** Marks a request as one of MetaClaw's own learning calls (by its prompt). */
export function isEvolverCall(request: RecordedRequest): boolean {
  return systemText(request).includes('You maintain a library of "skills"');
}

export function isExtractorCall(request: RecordedRequest): boolean {
  return systemText(request).includes('You keep the long-term memory');
}

export function systemText(request: RecordedRequest): string {
  const body = request.body ?? {};
  if (typeof body.system === 'string') return body.system;
  const first = Array.isArray(body.messages) ? body.messages[0] : undefined;
  return first?.role === 'system' && typeof first.content === 'string' ? first.content : '';
}

export function userText(request: RecordedRequest): string {
  const messages = Array.isArray(request.body?.messages) ? request.body.messages : [];
  const last = messages.at(-1);
  return typeof last?.content === 'string' ? last.content : '';
}

/** A completion whose content is `text` (what a learning call gets back). */
export function completionWith(text: string, response: ServerResponse, delayMs = 0): void {
  const send = () =>
    json(response, 200, {
      id: 'chatcmpl-learning',
      object: 'chat.completion',
      created: 1,
      model: 'scripted-model',
      choices: [{ index: 0, message: { role: 'assistant', content: text }, finish_reason: 'stop' }],
      usage: { prompt_tokens: 900, completion_tokens: 300, total_tokens: 1200 },
    });
  if (delayMs > 0) setTimeout(send, delayMs);
  else send();
}

/**
 * An upstream that answers the agent with `chat`, and MetaClaw's learning calls with what the
 * given functions return (a string is sent as the completion's text).
 */
export function learningAwareUpstream(options: {
  evolver?: (request: RecordedRequest) => string;
  extractor?: (request: RecordedRequest) => string;
  delayMs?: number;
  chat?: string;
}): Handler {
  return (request, response) => {
    if (options.evolver && isEvolverCall(request)) return completionWith(options.evolver(request), response, options.delayMs);
    if (options.extractor && isExtractorCall(request)) return completionWith(options.extractor(request), response, options.delayMs);
    const reply = { text: options.chat ?? 'Done.' };
    return request.path.endsWith('/messages') ? anthropicReply(reply)(request, response) : openAIReply(reply)(request, response);
  };
}
