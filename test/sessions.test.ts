import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import OpenAI from 'openai';
import { startProxy, waitFor, type ProxyHandle } from './support/proxy.js';
import { ScriptedUpstream } from './support/upstream.js';

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
});
