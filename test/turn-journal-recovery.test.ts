import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { turnFromJournal } from '../src/proxy/index.js';
import { journalHeader } from './support/journal.js';

/** SSE text of `events`, each a [name, data] pair (name null for a chat chunk). */
function sse(events: Array<[string | null, unknown]>): Buffer {
  return Buffer.from(
    events.map(([name, data]) => `${name ? `event: ${name}\n` : ''}data: ${typeof data === 'string' ? data : JSON.stringify(data)}\n\n`).join(''),
  );
}

const chatHeader = journalHeader({ clientFormat: 'openai', lineage: 'default|openai|m' });
const anthropicHeader = journalHeader({ clientFormat: 'anthropic', lineage: 'default|anthropic|m' });
const request = Buffer.from('{"model":"m","messages":[{"role":"user","content":"hello"}],"stream":true}');

function chunk(content: string, finishReason: string | null = null): [null, unknown] {
  return [null, { id: 'c1', object: 'chat.completion.chunk', model: 'm', choices: [{ index: 0, delta: { content }, finish_reason: finishReason }] }];
}

const anthropicStart: Array<[string, unknown]> = [
  [
    'message_start',
    {
      type: 'message_start',
      message: { id: 'msg_1', type: 'message', role: 'assistant', model: 'm', content: [], usage: { input_tokens: 3, output_tokens: 0 } },
    },
  ],
  ['content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }],
  ['content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Half an ans' } }],
];

describe('a streamed turn rebuilt from the journal after a crash is judged by how its stream ended', () => {
  test('a chat stream with its finish reason and [DONE] is a whole answer', () => {
    const turn = turnFromJournal(chatHeader, request, sse([chunk('Hello'), chunk(' there', 'stop'), [null, '[DONE]']]));
    assert.equal(turn?.outcome, 'ok');
    assert.equal(turn?.error, null);
    assert.equal(turn?.response?.text, 'Hello there');
  });

  test('a chat stream that stops after some chunks, with no finish reason and no error event, is a broken stream, not an answer', () => {
    const turn = turnFromJournal(chatHeader, request, sse([chunk('Half an'), chunk(' ans')]));
    assert.equal(turn?.outcome, 'stream_broken');
    assert.match(turn?.error ?? '', /without its final event/);
    assert.equal(turn?.response?.text, 'Half an ans');
  });

  test('a chat stream ended by an error event is a broken stream that says so', () => {
    const turn = turnFromJournal(chatHeader, request, sse([chunk('Half'), [null, { error: { message: 'overloaded', type: 'api_error' } }]]));
    assert.equal(turn?.outcome, 'stream_broken');
    assert.match(turn?.error ?? '', /ended with an error event/);
  });

  test('an Anthropic stream without message_stop is a broken stream; with it, a whole answer', () => {
    const cut = turnFromJournal(anthropicHeader, request, sse(anthropicStart));
    assert.equal(cut?.outcome, 'stream_broken');
    const whole = turnFromJournal(
      anthropicHeader,
      request,
      sse([
        ...anthropicStart,
        ['content_block_stop', { type: 'content_block_stop', index: 0 }],
        ['message_delta', { type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 4 } }],
        ['message_stop', { type: 'message_stop' }],
      ]),
    );
    assert.equal(whole?.outcome, 'ok');
    assert.equal(whole?.response?.text, 'Half an ans');
  });

  test('an answer whose status was an error is recorded as the upstream error it was', () => {
    const turn = turnFromJournal(journalHeader({ clientFormat: 'openai', status: 529 }), request, Buffer.from('{"error":{"message":"overloaded"}}'));
    assert.equal(turn?.outcome, 'upstream_error');
    assert.equal(turn?.response, null);
    assert.match(turn?.error ?? '', /the answer was an error/);
  });
});
