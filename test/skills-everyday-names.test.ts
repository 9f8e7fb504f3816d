import assert from 'node:assert/strict';
import { cpSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import OpenAI from 'openai';
import { recordedTurn, startProxy, tempHome, type ProxyHandle } from './support/proxy.js';
import { ScriptedUpstream } from './support/upstream.js';

/** A bank written by others (the dev4 set): its names hold everyday words ("hook", "tunnel", "photo") beside product names. */
const BANK = new URL('./fixtures/dev4-skills/bank', import.meta.url).pathname;

describe('a skill whose name is an everyday word (claude-code-hooks, tunnel-doctor, photo-to-scanned-pdf)', () => {
  let upstream: ScriptedUpstream;
  let proxy: ProxyHandle;
  let client: OpenAI;
  before(async () => {
    upstream = await ScriptedUpstream.start();
    const home = tempHome();
    cpSync(BANK, join(home, 'skills'), { recursive: true });
    proxy = await startProxy({
      home,
      config: { llm: { api_base: `${upstream.url}/v1`, api_key: 'k' }, skills: { auto_evolve: false }, memory: { auto_extract: false } },
    });
    client = new OpenAI({ baseURL: `${proxy.url}/v1`, apiKey: 'x', maxRetries: 0 });
  });
  after(async () => {
    await proxy?.dispose();
    await upstream?.close();
  });

  /** The skills the turn record says were injected for one request, asked in its own session. */
  async function injected(question: string, session: string): Promise<string[]> {
    const { response } = await client.chat.completions
      .create({ model: 'm', messages: [{ role: 'user', content: question }] }, { headers: { 'X-Session-Id': session } })
      .withResponse();
    const turn = await recordedTurn(proxy.url, response.headers.get('x-metaclaw-request-id')!);
    const section = (turn.added?.sections ?? []).find((item: { provider: string }) => item.provider === 'skills');
    return (section?.details.skills ?? []).map((skill: { name: string }) => skill.name);
  }

  test('a request that meets it only through that word and another common one gets no skill', async () => {
    assert.deepEqual(await injected("what's a good hook for the opening line of my wedding speech?", 'speech'), []);
    assert.deepEqual(await injected('why do road tunnels cost so much more to build than bridges?', 'tunnels'), []);
    assert.deepEqual(await injected('tips for taking better photos of the night sky with my phone', 'sky'), []);
  });

  test('a request about the skill still gets it', async () => {
    assert.deepEqual(await injected('my PreToolUse hook blocks every Bash command and now the session is stuck', 'hook'), ['claude-code-hooks']);
    assert.deepEqual(await injected('Tailscale ping works but ssh times out since I turned on the Clash proxy', 'tailscale'), ['tunnel-doctor']);
  });
});
