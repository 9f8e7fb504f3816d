/**
 * The scripted upstream for benchmarks, in its own process: a fixed OpenAI chat completion, or a
 * stream whose first event is sent at once and the rest after `delayMs`. Usage: port delayMs.
 */
import http from 'node:http';

const port = Number(process.argv[2] ?? 0);
const delayMs = Number(process.argv[3] ?? 0);

const completion = JSON.stringify({
  id: 'chatcmpl-bench',
  object: 'chat.completion',
  created: 1_700_000_000,
  model: 'bench-model',
  choices: [
    {
      index: 0,
      message: { role: 'assistant', content: 'A short benchmark answer of about twenty tokens, the size of a typical tool-call turn.' },
      finish_reason: 'stop',
    },
  ],
  usage: { prompt_tokens: 300, completion_tokens: 20, total_tokens: 320 },
});
const chunk = (content: string) =>
  `data: ${JSON.stringify({ id: 'chatcmpl-bench', object: 'chat.completion.chunk', created: 1_700_000_000, model: 'bench-model', choices: [{ index: 0, delta: { content }, finish_reason: null }] })}\n\n`;
const streamHead = chunk('A');
const streamTail =
  Array.from({ length: 20 }, (_, index) => chunk(` token${index}`)).join('') +
  `data: ${JSON.stringify({ id: 'chatcmpl-bench', object: 'chat.completion.chunk', created: 1_700_000_000, model: 'bench-model', choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] })}\n\ndata: [DONE]\n\n`;

const server = http.createServer((request, response) => {
  const chunks: Buffer[] = [];
  request.on('data', (part: Buffer) => chunks.push(part));
  request.on('end', () => {
    const stream = Buffer.concat(chunks).includes('"stream":true');
    const answer = () => {
      if (!stream) {
        response.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(completion) });
        response.end(completion);
        return;
      }
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      response.write(streamHead);
      setTimeout(() => response.end(streamTail), 5);
    };
    if (delayMs > 0) setTimeout(answer, delayMs);
    else answer();
  });
});
server.keepAliveTimeout = 60_000;
server.listen(port, '127.0.0.1', () => {
  process.stdout.write(`${JSON.stringify({ port: (server.address() as { port: number }).port })}\n`);
});
