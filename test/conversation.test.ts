import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import { deriveScope, extractUserRequest, readTurnSignals, stripNonStandardKeys } from '../src/conversation/index.js';

const openclawTurn = JSON.parse(readFileSync(new URL('./fixtures/openclaw-turn.json', import.meta.url), 'utf8'));

describe("the user's real request", () => {
  test('is taken from the last real user message of an OpenClaw turn, wrappers removed', () => {
    const request = extractUserRequest(openclawTurn.messages);
    assert.equal(request.text, 'Please rename the helper in src/utils.ts to formatDate and update its callers');
    assert.equal(request.messageIndex, 1, 'the internal-context carrier after it is skipped');
    assert.equal(request.isReset, false);
  });

  test('channel metadata blocks and injected memory blocks are not part of the request', () => {
    const text =
      'Conversation info (untrusted metadata):\n```json\n{"channel":"telegram"}\n```\n\nSender (untrusted metadata):\n```json\n{"name":"Ann"}\n```\n\n<relevant-memories>likes tea</relevant-memories>\nBook a table for two';
    assert.equal(extractUserRequest([{ role: 'user', content: text }]).text, 'Book a table for two');
  });

  test('tool-result-only user messages are skipped in favour of the earlier human request (Anthropic tool loop)', () => {
    const messages = [
      { role: 'user', content: 'Find the failing test' },
      { role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'exec', input: {} }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1', content: 'ok' }] },
    ];
    assert.equal(extractUserRequest(messages).text, 'Find the failing test');
  });

  test("/new and OpenClaw's reset notice mark a new conversation", () => {
    assert.equal(extractUserRequest([{ role: 'user', content: '/new' }]).isReset, true);
    assert.equal(extractUserRequest([{ role: 'user', content: 'A new session was started via /new or /reset. Greet the user.' }]).isReset, true);
    assert.equal(extractUserRequest([{ role: 'user', content: 'what is new in node 20?' }]).isReset, false);
  });
});

describe('session identity', () => {
  const body = (messages: unknown[], extra: Record<string, unknown> = {}) => ({ model: 'm', messages, ...extra });

  test("X-Session-Id wins; OpenClaw's session_id affinity header loses its call counter", () => {
    assert.equal(readTurnSignals({ 'x-session-id': 'abc' }, body([{ role: 'user', content: 'x' }]), 'openai').sessionId, 'abc');
    const affinity = readTurnSignals({ session_id: 'bench-day01-test:3' }, body([{ role: 'user', content: 'x' }]), 'openai');
    assert.equal(affinity.sessionId, 'bench-day01-test');
    assert.equal(affinity.identitySource, 'header');
  });

  test('body keys come next: session_id, metadata.session_id, then user', () => {
    assert.equal(readTurnSignals({}, body([], { session_id: 's1' }), 'openai').sessionId, 's1');
    assert.equal(readTurnSignals({}, body([], { metadata: { session_id: 's2' } }), 'anthropic').sessionId, 's2');
    assert.equal(readTurnSignals({}, body([], { user: 'u-77' }), 'openai').sessionId, 'u-77');
  });

  test("OpenClaw's Runtime line identifies the session when no header is sent", () => {
    const signals = readTurnSignals({}, openclawTurn, 'openai');
    assert.equal(signals.sessionId, 'openclaw-3f2c9a10-5b7e-4c1d-9a2f-0e8d7c6b5a41');
    assert.equal(signals.identitySource, 'runtime');
  });

  test('header-less clients get a stable fingerprint from the first user message', () => {
    const first = readTurnSignals(
      {},
      body([
        { role: 'system', content: 'v1' },
        { role: 'user', content: 'plan my trip' },
      ]),
      'openai',
    );
    const later = readTurnSignals(
      {},
      body([
        { role: 'system', content: 'v2 changed' },
        { role: 'user', content: 'plan my trip' },
        { role: 'assistant', content: 'ok' },
        { role: 'user', content: 'more' },
      ]),
      'openai',
    );
    const other = readTurnSignals({}, body([{ role: 'user', content: 'something else' }]), 'openai');
    assert.equal(first.identitySource, 'fingerprint');
    assert.equal(first.sessionId, later.sessionId);
    assert.notEqual(first.sessionId, other.sessionId);
  });

  test('turn type, session done and scope hints come from headers or body keys, which are then stripped', () => {
    const payload: Record<string, unknown> = body([{ role: 'user', content: 'x' }], {
      turn_type: 'side',
      session_done: true,
      memory_scope: 'team-a',
      user_id: 'ann',
      workspace_id: 'repo',
    });
    const signals = readTurnSignals({}, payload, 'openai');
    assert.equal(signals.turnType, 'side');
    assert.equal(signals.sessionDone, true);
    assert.deepEqual(stripNonStandardKeys(payload).sort(), ['memory_scope', 'session_done', 'turn_type', 'user_id', 'workspace_id']);
    assert.deepEqual(Object.keys(payload).sort(), ['messages', 'model']);
    const headers = readTurnSignals({ 'x-turn-type': 'MAIN', 'x-session-done': 'yes', 'x-user-id': 'bob' }, body([{ role: 'user', content: 'x' }]), 'openai');
    assert.equal(headers.turnType, 'main');
    assert.equal(headers.sessionDone, true);
    assert.equal(deriveScope(headers.scope, 'default'), 'user:bob');
  });

  test("scopes follow MetaClaw's rules", () => {
    assert.equal(deriveScope({ memoryScope: 'x', userId: 'u', workspaceId: 'w' }, 'd'), 'x');
    assert.equal(deriveScope({ memoryScope: undefined, userId: 'u', workspaceId: 'w' }, 'd'), 'user:u|workspace:w');
    assert.equal(deriveScope({ memoryScope: undefined, userId: undefined, workspaceId: 'w' }, 'd'), 'workspace:w');
    assert.equal(deriveScope({ memoryScope: undefined, userId: undefined, workspaceId: undefined }, 'd'), 'd');
  });
});

describe('client profiles', () => {
  const claudeCodeBody = (userId: string) => ({ model: 'm', metadata: { user_id: userId }, messages: [{ role: 'user', content: 'x' }] });

  test("Claude Code's session id is read from metadata.user_id, as JSON or in its older user_…_session_<uuid> form", () => {
    const headers = { 'user-agent': 'claude-cli/2.1.197 (external, sdk-ts)' };
    const json = readTurnSignals(headers, claudeCodeBody('{"device_id":"d","account_uuid":"","session_id":"s-json"}'), 'anthropic');
    assert.equal(json.profile.name, 'claude-code');
    assert.deepEqual([json.sessionId, json.identitySource], ['s-json', 'body']);
    const legacy = readTurnSignals(headers, claudeCodeBody(`user_${'a'.repeat(64)}_account__session_0f8e7d6c-5b4a-4392-8170-6f5e4d3c2b1a`), 'anthropic');
    assert.equal(legacy.sessionId, '0f8e7d6c-5b4a-4392-8170-6f5e4d3c2b1a');
  });

  test("the Gemini CLI's <session_context> preamble is removed even when the user's words share its message", () => {
    const preamble =
      "<session_context>\nThis is the Gemini CLI. We are setting up the context for our chat.\nToday's date is Tuesday, December 1, 2026 (formatted according to the user's locale).\nMy operating system is: linux\n- **Workspace Directories:**\n  - /home/dev/project\n- **Directory Structure:**\n\n/home/dev/project/\n├───a.ts\n└───b.ts\n</session_context>\n";
    const signals = readTurnSignals({ 'user-agent': 'GeminiCLI/0.20.0 (linux; x64)' }, { model: 'm', messages: [] }, 'openai');
    assert.equal(extractUserRequest([{ role: 'user', content: `${preamble}rename a.ts to c.ts` }], signals.profile).text, 'rename a.ts to c.ts');
  });

  test('X-Turn-Type: main keeps a request the profile would call a side request a main turn', () => {
    const title = {
      model: 'm',
      messages: [
        { role: 'system', content: 'You are a title generator. You output ONLY a thread title.' },
        { role: 'user', content: 'x' },
      ],
    };
    assert.deepEqual([readTurnSignals({}, title, 'openai').turnType, readTurnSignals({}, title, 'openai').sideRequest], ['side', 'title']);
    assert.equal(readTurnSignals({ 'x-turn-type': 'main' }, title, 'openai').turnType, 'main');
  });
});
