import http, { type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A scripted LLM upstream on 127.0.0.1: it records every request and answers from a queue of
 * handlers (then from the default handler). No model runs here; this stands in for the user's API.
 */
export interface RecordedRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: any;
  raw: string;
}

export type Handler = (request: RecordedRequest, response: ServerResponse) => void | Promise<void>;

export class ScriptedUpstream {
  readonly requests: RecordedRequest[] = [];
  private readonly queue: Handler[] = [];
  private readonly sockets = new Set<import('node:net').Socket>();
  defaultHandler: Handler;

  private constructor(
    private readonly server: http.Server,
    readonly url: string,
  ) {
    this.defaultHandler = (request, response) => {
      const text = 'Hello from the scripted upstream.';
      const reply = request.path.endsWith('/messages')
        ? anthropicReply({ text })
        : request.path.endsWith('/responses')
          ? responsesReply({ text })
          : openAIReply({ text });
      return reply(request, response);
    };
  }

  static async start(): Promise<ScriptedUpstream> {
    const holder: { instance?: ScriptedUpstream } = {};
    const server = http.createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        const raw = Buffer.concat(chunks).toString('utf8');
        let body: unknown;
        try {
          body = raw ? JSON.parse(raw) : undefined;
        } catch {
          body = raw;
        }
        const recorded: RecordedRequest = { method: request.method ?? 'GET', path: (request.url ?? '/').split('?')[0]!, headers: request.headers, body, raw };
        holder.instance!.requests.push(recorded);
        const handler = holder.instance!.queue.shift() ?? holder.instance!.defaultHandler;
        void Promise.resolve(handler(recorded, response)).catch((error: unknown) => {
          response.destroy(error as Error);
        });
      });
    });
    server.on('connection', (socket) => {
      holder.instance!.sockets.add(socket);
      socket.on('close', () => holder.instance!.sockets.delete(socket));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
    const { port } = server.address() as AddressInfo;
    holder.instance = new ScriptedUpstream(server, `http://127.0.0.1:${port}`);
    return holder.instance;
  }

  /** The next requests get these handlers, in order. */
  reply(...handlers: Handler[]): this {
    this.queue.push(...handlers);
    return this;
  }

  reset(): void {
    this.requests.length = 0;
    this.queue.length = 0;
  }

  modelRequests(): RecordedRequest[] {
    return this.requests.filter((request) => request.method === 'POST');
  }

  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

export interface ReplyOptions {
  text?: string;
  /** An `id` of '' is left out of a chat answer (some chat servers give their calls none). */
  toolCalls?: Array<{ id: string; name: string; arguments: string }>;
  usage?: { input: number; output: number };
  /** Split streamed text into this many deltas. */
  pieces?: number;
  /** Pause between streamed events, in ms. */
  gapMs?: number;
  model?: string;
}

/** An OpenAI chat completion (JSON, or SSE when the request asked to stream). */
export function openAIReply(options: ReplyOptions): Handler {
  return async (request, response) => {
    const text = options.text ?? '';
    const toolCalls = options.toolCalls ?? [];
    const usage = options.usage ?? { input: 11, output: 7 };
    const model = options.model ?? request.body?.model ?? 'scripted-model';
    const finish = toolCalls.length > 0 ? 'tool_calls' : 'stop';
    if (request.body?.stream !== true) {
      const message: Record<string, unknown> = { role: 'assistant', content: text || null };
      if (toolCalls.length > 0)
        message['tool_calls'] = toolCalls.map((call) => ({ ...callId(call.id), type: 'function', function: { name: call.name, arguments: call.arguments } }));
      json(response, 200, {
        id: 'chatcmpl-scripted',
        object: 'chat.completion',
        created: 1_700_000_000,
        model,
        choices: [{ index: 0, message, finish_reason: finish, logprobs: null }],
        usage: { prompt_tokens: usage.input, completion_tokens: usage.output, total_tokens: usage.input + usage.output },
      });
      return;
    }
    response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    const chunk = (delta: Record<string, unknown>, finishReason: string | null = null, extra: Record<string, unknown> = {}) =>
      `data: ${JSON.stringify({ id: 'chatcmpl-scripted', object: 'chat.completion.chunk', created: 1_700_000_000, model, choices: [{ index: 0, delta, finish_reason: finishReason }], ...extra })}\n\n`;
    const events: string[] = [chunk({ role: 'assistant', content: '' })];
    for (const piece of split(text, options.pieces ?? 3)) events.push(chunk({ content: piece }));
    toolCalls.forEach((call, index) => {
      events.push(chunk({ tool_calls: [{ index, ...callId(call.id), type: 'function', function: { name: call.name, arguments: '' } }] }));
      for (const piece of split(call.arguments, 2)) events.push(chunk({ tool_calls: [{ index, function: { arguments: piece } }] }));
    });
    events.push(chunk({}, finish));
    if (request.body?.stream_options?.include_usage) {
      events.push(
        `data: ${JSON.stringify({ id: 'chatcmpl-scripted', object: 'chat.completion.chunk', created: 1_700_000_000, model, choices: [], usage: { prompt_tokens: usage.input, completion_tokens: usage.output, total_tokens: usage.input + usage.output } })}\n\n`,
      );
    }
    events.push('data: [DONE]\n\n');
    await writeEvents(response, events, options.gapMs ?? 0);
    response.end();
  };
}

/** A tool call's `id` field; an empty id is left out, as chat servers that give their calls none send them. */
function callId(id: string): { id?: string } {
  return id === '' ? {} : { id };
}

/** An Anthropic message (JSON, or the named-event SSE sequence when streaming). */
export function anthropicReply(options: ReplyOptions): Handler {
  return async (request, response) => {
    const text = options.text ?? '';
    const toolCalls = options.toolCalls ?? [];
    const usage = options.usage ?? { input: 13, output: 5 };
    const model = options.model ?? request.body?.model ?? 'scripted-claude';
    const stopReason = toolCalls.length > 0 ? 'tool_use' : 'end_turn';
    if (request.body?.stream !== true) {
      const content: unknown[] = [];
      if (text) content.push({ type: 'text', text });
      for (const call of toolCalls) content.push({ type: 'tool_use', id: call.id, name: call.name, input: JSON.parse(call.arguments) });
      json(response, 200, {
        id: 'msg_scripted',
        type: 'message',
        role: 'assistant',
        model,
        content,
        stop_reason: stopReason,
        stop_sequence: null,
        usage: { input_tokens: usage.input, output_tokens: usage.output },
      });
      return;
    }
    response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    const event = (name: string, data: Record<string, unknown>) => `event: ${name}\ndata: ${JSON.stringify({ type: name, ...data })}\n\n`;
    const events: string[] = [
      event('message_start', {
        message: {
          id: 'msg_scripted',
          type: 'message',
          role: 'assistant',
          model,
          content: [],
          stop_reason: null,
          stop_sequence: null,
          usage: { input_tokens: usage.input, output_tokens: 1 },
        },
      }),
      event('ping', {}),
    ];
    let index = 0;
    if (text) {
      events.push(event('content_block_start', { index, content_block: { type: 'text', text: '' } }));
      for (const piece of split(text, options.pieces ?? 3)) events.push(event('content_block_delta', { index, delta: { type: 'text_delta', text: piece } }));
      events.push(event('content_block_stop', { index }));
      index++;
    }
    for (const call of toolCalls) {
      events.push(event('content_block_start', { index, content_block: { type: 'tool_use', id: call.id, name: call.name, input: {} } }));
      for (const piece of split(call.arguments, 2))
        events.push(event('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: piece } }));
      events.push(event('content_block_stop', { index }));
      index++;
    }
    events.push(event('message_delta', { delta: { stop_reason: stopReason, stop_sequence: null }, usage: { output_tokens: usage.output } }));
    events.push(event('message_stop', {}));
    await writeEvents(response, events, options.gapMs ?? 0);
    response.end();
  };
}

/**
 * An OpenAI Responses API answer (JSON, or its SSE event sequence when streaming), for an upstream
 * that serves /v1/responses itself. Written out by hand, independent of the proxy's own writer.
 */
export function responsesReply(options: ReplyOptions & { id?: string }): Handler {
  return async (request, response) => {
    const id = options.id ?? 'resp_scripted';
    const text = options.text ?? '';
    const usage = options.usage ?? { input: 17, output: 4 };
    const model = options.model ?? request.body?.model ?? 'scripted-responses';
    const message = { type: 'message', id: 'msg_scripted', status: 'completed', role: 'assistant', content: [{ type: 'output_text', text, annotations: [] }] };
    const calls = (options.toolCalls ?? []).map((call, index) => ({
      type: 'function_call',
      id: `fc_scripted_${index}`,
      call_id: call.id,
      name: call.name,
      arguments: call.arguments,
      status: 'completed',
    }));
    const output = [...(text ? [message] : []), ...calls];
    const whole = (status: string, items: unknown[]) => ({
      id,
      object: 'response',
      created_at: 1_700_000_000,
      status,
      model,
      output: items,
      error: null,
      incomplete_details: null,
      usage:
        status === 'completed'
          ? {
              input_tokens: usage.input,
              input_tokens_details: { cached_tokens: 0 },
              output_tokens: usage.output,
              output_tokens_details: { reasoning_tokens: 0 },
              total_tokens: usage.input + usage.output,
            }
          : null,
    });
    if (request.body?.stream !== true) {
      json(response, 200, whole('completed', output));
      return;
    }
    response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    let sequence = 0;
    const event = (type: string, data: Record<string, unknown>) =>
      `event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: sequence++, ...data })}\n\n`;
    const events = [event('response.created', { response: whole('in_progress', []) })];
    if (text) {
      const where = { item_id: message.id, output_index: 0, content_index: 0 };
      events.push(event('response.output_item.added', { output_index: 0, item: { ...message, status: 'in_progress', content: [] } }));
      events.push(event('response.content_part.added', { ...where, part: { type: 'output_text', text: '', annotations: [] } }));
      for (const piece of split(text, options.pieces ?? 3)) events.push(event('response.output_text.delta', { ...where, delta: piece }));
      events.push(event('response.output_text.done', { ...where, text }));
      events.push(event('response.content_part.done', { ...where, part: message.content[0] }));
      events.push(event('response.output_item.done', { output_index: 0, item: message }));
    }
    calls.forEach((call, index) => {
      const outputIndex = (text ? 1 : 0) + index;
      events.push(event('response.output_item.added', { output_index: outputIndex, item: { ...call, arguments: '', status: 'in_progress' } }));
      events.push(event('response.function_call_arguments.delta', { item_id: call.id, output_index: outputIndex, delta: call.arguments }));
      events.push(event('response.output_item.done', { output_index: outputIndex, item: call }));
    });
    events.push(event('response.completed', { response: whole('completed', output) }));
    await writeEvents(response, events, options.gapMs ?? 0);
    response.end();
  };
}

export function errorReply(status: number, body: unknown, headers: Record<string, string> = {}): Handler {
  return (_request, response) => json(response, status, body, headers);
}

/** Accepts the request and never answers. */
export function hangReply(): Handler {
  return () => undefined;
}

/** The streamed answers of each API, as the scripted upstream gives them. */
type StreamFormat = 'openai' | 'anthropic' | 'responses';
const STREAMED_REPLY: Record<StreamFormat, (options: ReplyOptions) => Handler> = { openai: openAIReply, anthropic: anthropicReply, responses: responsesReply };

/** Starts a stream, sends `events` of it, then cuts the connection. */
export function dropMidStream(format: 'openai' | 'anthropic', text: string, keepEvents: number): Handler {
  return cutStream(format, text, keepEvents, (response) => response.socket?.destroy());
}

/**
 * The first `keepEvents` events of a streamed answer (negative: all but that many last ones), then
 * the response ends as a whole HTTP body would: no broken connection, only no final events.
 */
export function endEarly(format: StreamFormat, text: string, keepEvents: number): Handler {
  return cutStream(format, text, keepEvents, (response) => response.end());
}

/** Each API's own error event, as its servers send one in the middle of an answer. */
const ERROR_EVENT: Record<StreamFormat, (message: string) => string> = {
  openai: (message) => `data: ${JSON.stringify({ error: { message, type: 'server_error', param: null, code: null } })}\n\n`,
  anthropic: (message) => `event: error\ndata: ${JSON.stringify({ type: 'error', error: { type: 'overloaded_error', message } })}\n\n`,
  responses: (message) =>
    `event: response.failed\ndata: ${JSON.stringify({
      type: 'response.failed',
      sequence_number: 99,
      response: { id: 'resp_scripted', object: 'response', status: 'failed', output: [], error: { code: 'server_error', message }, usage: null },
    })}\n\n`,
};

/**
 * The first `keepEvents` events of a streamed answer, then the API's own error event (chat: a
 * `data: {"error"}` chunk; Anthropic: `event: error`, overloaded_error; Responses: response.failed),
 * then the end of the body, or, with `hold`, silence with the connection left open.
 */
export function errorMidStream(format: StreamFormat, text: string, keepEvents: number, message: string, options: { hold?: boolean } = {}): Handler {
  return cutStream(format, text, keepEvents, (response) => {
    response.write(ERROR_EVENT[format](message));
    if (!options.hold) response.end();
  });
}

/** `handler` with every byte it writes to the response kept in `written`, as the client of the upstream gets them. */
export function recordingWrites(handler: Handler, written: string[]): Handler {
  return (request, response) => {
    const write = response.write.bind(response) as (chunk: string) => boolean;
    response.write = ((chunk: string) => {
      written.push(String(chunk));
      return write(chunk);
    }) as typeof response.write;
    return handler(request, response);
  };
}

function cutStream(format: StreamFormat, text: string, keepEvents: number, cut: (response: ServerResponse) => void): Handler {
  return async (request, response) => {
    const fake = new CollectingResponse();
    await STREAMED_REPLY[format]({ text, pieces: 6 })({ ...request, body: { ...request.body, stream: true } }, fake as unknown as ServerResponse);
    response.writeHead(200, { 'content-type': 'text/event-stream' });
    const events = fake.text.split('\n\n').filter(Boolean).slice(0, keepEvents);
    for (const event of events) response.write(`${event}\n\n`);
    await new Promise((resolve) => setTimeout(resolve, 50));
    cut(response);
  };
}

export function json(response: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  response.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), ...headers });
  response.end(text);
}

async function writeEvents(response: ServerResponse, events: string[], gapMs: number): Promise<void> {
  for (const event of events) {
    response.write(event);
    if (gapMs > 0) await new Promise((resolve) => setTimeout(resolve, gapMs));
  }
}

function split(text: string, pieces: number): string[] {
  if (text === '') return [];
  const size = Math.max(1, Math.ceil(text.length / pieces));
  const parts: string[] = [];
  for (let index = 0; index < text.length; index += size) parts.push(text.slice(index, index + size));
  return parts;
}

/** Captures what a handler would write, to replay part of it. */
class CollectingResponse {
  text = '';
  writeHead(): this {
    return this;
  }
  write(chunk: string): boolean {
    this.text += chunk;
    return true;
  }
  end(): void {}
}

/** Starts a stream, sends `keepEvents` of it, then goes silent with the connection left open. */
export function stallMidStream(format: 'openai' | 'anthropic', text: string, keepEvents: number): Handler {
  return async (request, response) => {
    const fake = new CollectingResponse();
    await (format === 'openai' ? openAIReply({ text, pieces: 6 }) : anthropicReply({ text, pieces: 6 }))(
      { ...request, body: { ...request.body, stream: true } },
      fake as unknown as ServerResponse,
    );
    response.writeHead(200, { 'content-type': 'text/event-stream' });
    for (const event of fake.text.split('\n\n').filter(Boolean).slice(0, keepEvents)) response.write(`${event}\n\n`);
  };
}

/**
 * Streams the first `before` events of `reply`, waits for `gate`, then sends the rest: whatever
 * the client has by the time the gate opens came through while the upstream was still sending
 * (an event to wait on, instead of timing the gaps between pieces).
 */
export function gatedReply(reply: Handler, before: number, gate: Promise<unknown>): Handler {
  return async (request, response) => {
    const fake = new CollectingResponse();
    await reply({ ...request, body: { ...request.body, stream: true } }, fake as unknown as ServerResponse);
    response.writeHead(200, { 'content-type': 'text/event-stream' });
    const events = fake.text
      .split('\n\n')
      .filter(Boolean)
      .map((event) => `${event}\n\n`);
    for (const event of events.slice(0, before)) response.write(event);
    await gate;
    for (const event of events.slice(before)) response.write(event);
    response.end();
  };
}
