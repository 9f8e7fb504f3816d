import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { startProxy, waitFor, type ProxyHandle } from './support/proxy.js';
import { errorReply, ScriptedUpstream } from './support/upstream.js';

interface SessionJson {
  id: string;
  identity_source: string;
  ended_at: number | null;
  end_reason: string | null;
  turn_count: number;
  main_turn_count: number;
}

describe('sessions are identified, ended and listed', () => {
  let upstream: ScriptedUpstream;
  let proxy: ProxyHandle;
  let client: OpenAI;

  before(async () => {
    upstream = await ScriptedUpstream.start();
    proxy = await startProxy({ config: { llm: { api_base: `${upstream.url}/v1`, api_key: 'k' } } });
    client = new OpenAI({ baseURL: `${proxy.url}/v1`, apiKey: 'x', maxRetries: 0 });
  });
  after(async () => {
    await proxy?.dispose();
    await upstream?.close();
  });

  const sessions = async (): Promise<SessionJson[]> => JSON.parse((await proxy.cli(['sessions', 'list', '--json', '--limit', '100'])).stdout);
  const session = async (id: string) => (await sessions()).find((candidate) => candidate.id === id);

  test('a header-less conversation keeps one session across turns; side turns are counted apart', async () => {
    const history: OpenAI.Chat.Completions.ChatCompletionMessageParam[] = [{ role: 'user', content: 'help me plan a garden' }];
    await client.chat.completions.create({ model: 'm', messages: history });
    history.push({ role: 'assistant', content: 'Sure.' }, { role: 'user', content: 'what about tomatoes?' });
    await client.chat.completions.create({ model: 'm', messages: history });
    await client.chat.completions.create({ model: 'm', messages: history }, { headers: { 'X-Turn-Type': 'side' } });
    const found = await waitFor(async () => (await sessions()).find((candidate) => candidate.identity_source === 'fingerprint' && candidate.turn_count === 3));
    assert.equal(found.main_turn_count, 2);
  });

  test('X-Session-Done: true ends the session after its turn', async () => {
    await client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'one' }] }, { headers: { 'X-Session-Id': 'done-session' } });
    await client.chat.completions.create(
      { model: 'm', messages: [{ role: 'user', content: 'two' }] },
      { headers: { 'X-Session-Id': 'done-session', 'X-Session-Done': 'true' } },
    );
    const ended = await waitFor(async () => {
      const current = await session('done-session');
      return current?.ended_at ? current : undefined;
    });
    assert.equal(ended.end_reason, 'done_header');
    assert.equal(ended.turn_count, 2);
  });

  test('a session idle past session.idle_timeout_minutes is ended', async () => {
    const quick = await startProxy({ config: { llm: { api_base: `${upstream.url}/v1`, api_key: 'k' }, session: { idle_timeout_minutes: 0.02 } } });
    try {
      const quickClient = new OpenAI({ baseURL: `${quick.url}/v1`, apiKey: 'x', maxRetries: 0 });
      await quickClient.chat.completions.create(
        { model: 'm', messages: [{ role: 'user', content: 'short chat' }] },
        { headers: { 'X-Session-Id': 'idle-session' } },
      );
      const ended = await waitFor(async () => {
        const listed = JSON.parse((await quick.cli(['sessions', 'list', '--json'])).stdout) as SessionJson[];
        const current = listed.find((candidate) => candidate.id === 'idle-session');
        return current?.ended_at ? current : undefined;
      }, 15_000);
      assert.equal(ended.end_reason, 'idle');
    } finally {
      await quick.dispose();
    }
  });

  test('/new ends the previous session of the same agent and starts a new one', async () => {
    await client.chat.completions.create(
      { model: 'agent-model', messages: [{ role: 'user', content: 'first conversation' }] },
      { headers: { 'X-Session-Id': 'before-reset' } },
    );
    await client.chat.completions.create(
      { model: 'agent-model', messages: [{ role: 'user', content: '/new' }] },
      { headers: { 'X-Session-Id': 'after-reset' } },
    );
    const ended = await waitFor(async () => {
      const current = await session('before-reset');
      return current?.end_reason === 'reset' ? current : undefined;
    });
    assert.ok(ended.ended_at);
    assert.equal((await session('after-reset'))?.ended_at, null);
  });

  test('metaclaw sessions show prints each turn with its request and answer', async () => {
    await client.chat.completions.create(
      { model: 'm', messages: [{ role: 'user', content: 'Show me in the CLI' }] },
      { headers: { 'X-Session-Id': 'cli-session' } },
    );
    await waitFor(async () => (await session('cli-session'))?.turn_count === 1);
    const shown = await proxy.cli(['sessions', 'show', 'cli-session']);
    assert.equal(shown.code, 0);
    assert.match(shown.stdout, /Session cli-session/);
    assert.match(shown.stdout, /user: Show me in the CLI/);
    assert.match(shown.stdout, /assistant: Hello from the scripted upstream\./);
    const listed = await proxy.cli(['sessions', 'list']);
    assert.match(listed.stdout, /cli-session/);
    const missing = await proxy.cli(['sessions', 'show', 'nope']);
    assert.equal(missing.code, 1);
  });

  test('sessions list prints a long session id whole, so sessions show takes it as listed', async () => {
    const long = 'project-alpha/feature-branch-refactor-session-2026-12-04-abcdef';
    await client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'A long id' }] }, { headers: { 'X-Session-Id': long } });
    await waitFor(async () => (await session(long))?.turn_count === 1);
    const row = (await proxy.cli(['sessions', 'list'])).stdout.split('\n').find((line) => line.startsWith('project-alpha/'));
    const listedId = row?.split(/\s+/)[0];
    assert.equal(listedId, long);
    const shown = await proxy.cli(['sessions', 'show', long]);
    assert.equal(shown.code, 0, shown.stderr);
    assert.match(shown.stdout, /user: A long id/);
  });
});

describe('clients without a session id: one run is one session, two runs are two', () => {
  let upstream: ScriptedUpstream;
  let proxy: ProxyHandle;
  let openai: OpenAI;

  before(async () => {
    upstream = await ScriptedUpstream.start();
    // No retries of its own: the upstream's 500 reaches the client, which then sends its request again.
    proxy = await startProxy({ config: { llm: { api_base: `${upstream.url}/v1`, api_key: 'k', max_retries: 0 } } });
    openai = new OpenAI({ baseURL: `${proxy.url}/v1`, apiKey: 'x', maxRetries: 0, defaultHeaders: { 'User-Agent': 'QwenCode/0.15.10 (linux; x64)' } });
  });
  after(async () => {
    await proxy?.dispose();
    await upstream?.close();
  });

  const sessions = async (): Promise<SessionJson[]> => JSON.parse((await proxy.cli(['sessions', 'list', '--json', '--limit', '100'])).stdout);

  /** Runs `send`, then waits for its `turns` turns to be recorded; returns the sessions they went to. */
  async function sessionsOf(send: () => Promise<unknown>, turns: number): Promise<SessionJson[]> {
    const before = new Map((await sessions()).map((session) => [session.id, session.turn_count]));
    await send();
    return waitFor(async () => {
      const touched = (await sessions()).filter((session) => session.turn_count !== (before.get(session.id) ?? 0));
      const added = touched.reduce((sum, session) => sum + session.turn_count - (before.get(session.id) ?? 0), 0);
      return added === turns ? touched : undefined;
    });
  }

  const opening = (words: string): OpenAI.Chat.Completions.ChatCompletionMessageParam[] => [
    { role: 'system', content: 'You are a coding agent.' },
    // Qwen Code's own preamble: the same for every run, not the user's words.
    { role: 'user', content: "This is the Qwen Code. We are setting up the context for our chat.\nToday's date is Tuesday, December 1, 2026." },
    { role: 'assistant', content: 'Got it. Thanks for the context!' },
    { role: 'user', content: words },
  ];

  test('the same opening request sent twice, each answered, opens two sessions (chat completions, messages, responses)', async () => {
    const chat = () => openai.chat.completions.create({ model: 'm', messages: opening('say hello') });
    const first = await sessionsOf(chat, 1);
    const second = await sessionsOf(chat, 1);
    assert.equal(first.length, 1);
    assert.equal(second.length, 1);
    assert.notEqual(second[0]!.id, first[0]!.id, 'the second run is a session of its own');
    for (const session of [...first, ...second]) assert.equal(session.identity_source, 'fingerprint');

    const anthropic = new Anthropic({ baseURL: proxy.url, apiKey: 'x', maxRetries: 0 });
    const message = () => anthropic.messages.create({ model: 'm', max_tokens: 50, messages: [{ role: 'user', content: 'say hello over messages' }] });
    const [messagesFirst] = await sessionsOf(message, 1);
    const [messagesSecond] = await sessionsOf(message, 1);
    assert.notEqual(messagesSecond!.id, messagesFirst!.id, 'Anthropic Messages: two runs, two sessions');

    const response = () => openai.responses.create({ model: 'm', instructions: 'Be brief.', input: 'say hello over responses' });
    const [responsesFirst] = await sessionsOf(response, 1);
    const [responsesSecond] = await sessionsOf(response, 1);
    assert.notEqual(responsesSecond!.id, responsesFirst!.id, 'Responses API: two runs, two sessions');
  });

  test('a conversation that goes on after its opening stays in the newest session of its first words', async () => {
    const history = opening('plan my week');
    const start = () => openai.chat.completions.create({ model: 'm', messages: history });
    await sessionsOf(start, 1);
    const [newest] = await sessionsOf(start, 1);
    history.push({ role: 'assistant', content: 'Sure, what is on it?' }, { role: 'user', content: 'two meetings and a dentist' });
    const [continued] = await sessionsOf(() => openai.chat.completions.create({ model: 'm', messages: history }), 1);
    assert.equal(continued!.id, newest!.id);
    assert.equal(continued!.turn_count, 2);
  });

  test('the same opening request sent again after an upstream 500 stays one session', async () => {
    upstream.reply(errorReply(500, { error: { message: 'upstream broke', type: 'server_error' } }));
    const send = () => openai.chat.completions.create({ model: 'm', messages: opening('retry me') });
    const touched = await sessionsOf(async () => {
      await assert.rejects(send(), (error: InstanceType<typeof OpenAI.APIError>) => error.status === 500);
      await send();
    }, 2);
    assert.equal(touched.length, 1, `both attempts are one session: ${JSON.stringify(touched)}`);
    assert.equal(touched[0]!.turn_count, 2);
  });

  test('each run ends as a session of its own when it goes idle, so each is learned from apart', async () => {
    const quick = await startProxy({ config: { llm: { api_base: `${upstream.url}/v1`, api_key: 'k' }, session: { idle_timeout_minutes: 0.02 } } });
    try {
      const client = new OpenAI({ baseURL: `${quick.url}/v1`, apiKey: 'x', maxRetries: 0, defaultHeaders: { 'User-Agent': 'QwenCode/0.15.10 (linux; x64)' } });
      await client.chat.completions.create({ model: 'm', messages: opening('say hello') });
      await client.chat.completions.create({ model: 'm', messages: opening('say hello') });
      const ended = await waitFor(async () => {
        const listed = JSON.parse((await quick.cli(['sessions', 'list', '--json'])).stdout) as SessionJson[];
        return listed.length === 2 && listed.every((session) => session.end_reason === 'idle') ? listed : undefined;
      }, 15_000);
      assert.deepEqual(
        ended.map((session) => session.main_turn_count),
        [1, 1],
      );
    } finally {
      await quick.dispose();
    }
  });

  test('a session id from the client is kept, however often the same opening request comes', async () => {
    const send = () => openai.chat.completions.create({ model: 'm', messages: opening('say hello') }, { headers: { 'X-Session-Id': 'explicit-run' } });
    await sessionsOf(send, 1);
    const [again] = await sessionsOf(send, 1);
    assert.equal(again!.id, 'explicit-run');
    assert.equal(again!.turn_count, 2);
  });
});
