import type { ServerResponse } from 'node:http';
import type OpenAI from 'openai';
import { waitFor, type ProxyHandle } from './proxy.js';
import { anthropicReply, json, openAIReply, type Handler, type RecordedRequest } from './upstream.js';

/** A skill change as the evolver returns it, learned from a session where the user corrected a deploy. */
export const DEPLOY_SKILL = {
  action: 'create',
  name: 'blue-green-deploys',
  description: 'Use when deploying the billing service (or any service) to production: blue-green switch, rollback plan, and which days deploys are allowed.',
  category: 'automation',
  body: '# Blue-green deploys\n\n**When to use:** any production deploy.\n\n**Steps**\n1. **Check the day.** Never deploy on Fridays.\n2. **Run the blue-green script.** `./scripts/blue-green.sh billing` switches traffic only after health checks pass.\n3. **Keep the old color warm.** Roll back by switching traffic back.\n\n**Avoid**\n- Deploying by hand with kubectl apply.',
  evidence: ['turn 2: the user said "No, I meant with the blue-green script, and never deploy on Fridays"'],
  reason: 'The user corrected the deploy procedure.',
};

export async function status(proxy: ProxyHandle): Promise<any> {
  return (await fetch(`${proxy.url}/status`)).json();
}

/** The proxy's /status once `ready` holds for it (polled every 100 ms). */
export function statusWhen(proxy: ProxyHandle, ready: (report: any) => unknown, timeoutMs = 20_000): Promise<any> {
  return waitFor(
    async () => {
      const report = await status(proxy);
      return ready(report) ? report : undefined;
    },
    timeoutMs,
    100,
  );
}

/** Runs a session whose last request ends it (X-Session-Done); returns that request's id. */
export async function session(client: OpenAI, id: string, requests: string[], system = 'You are a deploy bot. SECRET-SYSTEM-MARKER'): Promise<string> {
  const messages: OpenAI.Chat.Completions.ChatCompletionMessageParam[] = [{ role: 'system', content: system }];
  let requestId = '';
  for (const [index, request] of requests.entries()) {
    messages.push({ role: 'user', content: request });
    const last = index === requests.length - 1;
    const { data: completion, response } = await client.chat.completions
      .create({ model: 'scripted-model', messages }, { headers: { 'X-Session-Id': id, ...(last ? { 'X-Session-Done': 'true' } : {}) } })
      .withResponse();
    requestId = response.headers.get('x-metaclaw-request-id')!;
    messages.push({ role: 'assistant', content: completion.choices[0]!.message.content ?? '' });
  }
  return requestId;
}

/** Marks a request as one of MetaClaw's own learning calls (by its prompt). */
export function isEvolverCall(request: RecordedRequest): boolean {
  return systemText(request).includes('You maintain a library of "skills"');
}

export function isSearchKeysCall(request: RecordedRequest): boolean {
  return systemText(request).includes('You write search keys for a library of "skills"');
}

export function isMemoryKeysCall(request: RecordedRequest): boolean {
  return systemText(request).includes('You write search keys for memories');
}

export function isJudgeCall(request: RecordedRequest): boolean {
  return systemText(request).includes('You are a strict quality reviewer of an AI assistant');
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
  /** a Handler (not a string) answers the request itself (an error, an outage) */
  evolver?: (request: RecordedRequest) => string | Handler;
  extractor?: (request: RecordedRequest) => string;
  searchKeys?: (request: RecordedRequest) => string;
  memoryKeys?: (request: RecordedRequest) => string;
  /** the RL judge; a Handler (not a string) answers the request itself (an outage) */
  judge?: (request: RecordedRequest) => string | Handler;
  delayMs?: number;
  /** the agent's answer (a function: per request) */
  chat?: string | ((request: RecordedRequest) => string);
}): Handler {
  return (request, response) => {
    if (options.evolver && isEvolverCall(request)) return answerWith(options.evolver(request), request, response, options.delayMs);
    if (options.extractor && isExtractorCall(request)) return completionWith(options.extractor(request), response, options.delayMs);
    // Search keys calls come from any library once the user has written a second request: unless a
    // test scripts them, they are answered as a model with no keys to add would answer.
    if (isSearchKeysCall(request)) return completionWith(options.searchKeys?.(request) ?? '{"skills": []}', response, options.delayMs);
    if (isMemoryKeysCall(request)) return completionWith(options.memoryKeys?.(request) ?? '{"units": []}', response, options.delayMs);
    if (options.judge && isJudgeCall(request)) return answerWith(options.judge(request), request, response, options.delayMs);
    const reply = { text: (typeof options.chat === 'function' ? options.chat(request) : options.chat) ?? 'Done.' };
    return request.path.endsWith('/messages') ? anthropicReply(reply)(request, response) : openAIReply(reply)(request, response);
  };
}

function answerWith(answer: string | Handler, request: RecordedRequest, response: ServerResponse, delayMs: number | undefined): void | Promise<void> {
  return typeof answer === 'string' ? completionWith(answer, response, delayMs) : answer(request, response);
}
