import assert from 'node:assert/strict';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { freePort, runCli, startProxy, tempHome, waitFor, type ProxyHandle } from './support/proxy.js';
import { ScriptedUpstream } from './support/upstream.js';

describe('a proxy bound beyond loopback requires its key', () => {
  let upstream: ScriptedUpstream;
  let proxy: ProxyHandle;
  const proxyKey = 'mc-proxy-key-7f3a9c';

  before(async () => {
    upstream = await ScriptedUpstream.start();
    proxy = await startProxy({ config: { proxy: { host: '0.0.0.0', api_key: proxyKey }, llm: { api_base: `${upstream.url}/v1` } } });
  });
  after(async () => {
    await proxy?.dispose();
    await upstream?.close();
  });

  test("requests without the key get 401 in the client API's shape; /healthz stays open", async () => {
    const openai = new OpenAI({ baseURL: `${proxy.url}/v1`, apiKey: 'wrong-key', maxRetries: 0 });
    const openaiError = await openai.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'x' }] }).then(
      () => undefined,
      (error: unknown) => error,
    );
    assert.ok(openaiError instanceof OpenAI.AuthenticationError);
    const anthropic = new Anthropic({ baseURL: proxy.url, apiKey: 'wrong-key', maxRetries: 0 });
    const anthropicError = await anthropic.messages.create({ model: 'c', max_tokens: 5, messages: [{ role: 'user', content: 'x' }] }).then(
      () => undefined,
      (error: unknown) => error,
    );
    assert.ok(anthropicError instanceof Anthropic.AuthenticationError);
    assert.equal((anthropicError.error as { type?: string }).type, 'error');
    assert.equal((await fetch(`${proxy.url}/status`)).status, 401);
    assert.equal((await fetch(`${proxy.url}/healthz`)).status, 200);
    assert.equal(upstream.requests.length, 0);
  });

  test('the key works as a Bearer token and as x-api-key, and never travels upstream', async () => {
    const openai = new OpenAI({ baseURL: `${proxy.url}/v1`, apiKey: proxyKey, maxRetries: 0 });
    await openai.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'x' }] });
    const anthropicClient = await fetch(`${proxy.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': proxyKey },
      body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'y' }] }),
    });
    assert.equal(anthropicClient.status, 200);
    for (const request of upstream.modelRequests()) {
      assert.equal(JSON.stringify(request.headers).includes(proxyKey), false, 'the proxy key reached the upstream');
    }
    assert.equal((await fetch(`${proxy.url}/status`, { headers: { authorization: `Bearer ${proxyKey}` } })).status, 200);
  });

  test("with x-metaclaw-api-key the client's own Authorization is passed through", async () => {
    upstream.reset();
    const response = await fetch(`${proxy.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-metaclaw-api-key': proxyKey, authorization: 'Bearer sk-users-own' },
      body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'z' }] }),
    });
    assert.equal(response.status, 200);
    assert.equal(upstream.modelRequests()[0]!.headers['authorization'], 'Bearer sk-users-own');
  });

  test('no key or authorization header ever reaches the log', async () => {
    // the log is written in batches: wait until the requests above are in it
    const log = await waitFor(
      () => {
        const text = readFileSync(join(proxy.home, 'logs', 'metaclaw.log'), 'utf8');
        return text.split('"request finished"').length - 1 >= 3 ? text : undefined;
      },
      5_000,
      100,
    );
    for (const secret of [proxyKey, 'sk-users-own', 'wrong-key']) assert.equal(log.includes(secret), false, `${secret} was logged`);
  });
});

describe('llm.api_key_env: the main key lives in an environment variable', () => {
  let upstream: ScriptedUpstream;

  before(async () => {
    upstream = await ScriptedUpstream.start();
  });
  after(async () => {
    await upstream?.close();
  });

  test('the upstream receives the key from the variable the config names, never the client’s', async () => {
    const proxy = await startProxy({
      config: { llm: { api_base: `${upstream.url}/v1`, api_key_env: 'MY_UPSTREAM_KEY' } },
      env: { MY_UPSTREAM_KEY: 'sk-from-the-environment-5d1e' },
    });
    try {
      upstream.reset();
      const client = new OpenAI({ baseURL: `${proxy.url}/v1`, apiKey: 'sk-client-own', maxRetries: 0 });
      await client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'hi' }] });
      assert.equal(upstream.modelRequests()[0]!.headers['authorization'], 'Bearer sk-from-the-environment-5d1e');
      const status = (await (await fetch(`${proxy.url}/status`)).json()) as { upstream: { key_source: string } };
      assert.equal(status.upstream.key_source, 'env');
    } finally {
      await proxy.dispose();
    }
  });

  test('a variable that is not set is named in a warning at start, and the client’s own key passes through', async () => {
    const home = tempHome();
    const port = await freePort();
    writeFileSync(join(home, 'config.yaml'), `proxy:\n  port: ${port}\nllm:\n  api_base: ${upstream.url}/v1\n  api_key_env: MY_UNSET_KEY\n`, { mode: 0o600 });
    try {
      const started = await runCli(['start'], { home });
      assert.equal(started.code, 0, started.stderr);
      assert.match(started.stderr, /warning: llm\.api_key_env names MY_UNSET_KEY, which is empty or not set: that upstream gets the client's own key/);
      upstream.reset();
      const client = new OpenAI({ baseURL: `http://127.0.0.1:${port}/v1`, apiKey: 'sk-client-own', maxRetries: 0 });
      await client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'hi' }] });
      assert.equal(upstream.modelRequests()[0]!.headers['authorization'], 'Bearer sk-client-own');
    } finally {
      await runCli(['stop'], { home });
      rmSync(home, { recursive: true, force: true });
    }
  });

  test('a key pasted where the variable name goes is refused and not written', async () => {
    const home = tempHome();
    try {
      const set = await runCli(['config', 'set', 'llm.api_key_env', 'sk-live-9f8e7d6c'], { home });
      assert.notEqual(set.code, 0);
      assert.match(set.stderr, /name of an environment variable/);
      assert.equal((await runCli(['config', 'get', 'llm.api_key_env'], { home })).stdout.includes('sk-live'), false);
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });
});

describe("a password in the upstream's api_base (user:password@host)", () => {
  test('is masked wherever the upstream is shown: start, status, /status, the dashboard, the log; requests still reach it', async () => {
    const upstream = await ScriptedUpstream.start();
    const password = 'basic-auth-pw-4c1e9b';
    const home = tempHome();
    const port = await freePort();
    writeFileSync(
      join(home, 'config.yaml'),
      `llm:\n  api_base: http://llmuser:${password}@${upstream.url.slice('http://'.length)}/v1\nproxy:\n  port: ${port}\n`,
      {
        mode: 0o600,
      },
    );
    const started = await runCli(['start'], { home });
    try {
      assert.equal(started.code, 0, started.stderr);
      assert.match(started.stdout, /Upstream: http:\/\/llmuser:\*\*\*\*@127\.0\.0\.1/);
      const openai = new OpenAI({ baseURL: `http://127.0.0.1:${port}/v1`, apiKey: 'x', maxRetries: 0 });
      await openai.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'hi' }] });
      assert.equal(upstream.modelRequests().length, 1, 'the upstream is reached');
      const shown = [
        started.stdout,
        (await runCli(['status'], { home })).stdout,
        await (await fetch(`http://127.0.0.1:${port}/status`)).text(),
        await (await fetch(`http://127.0.0.1:${port}/v1/dashboard/overview`)).text(),
        readFileSync(join(home, 'logs', 'metaclaw.log'), 'utf8'),
      ];
      for (const [index, text] of shown.entries()) {
        assert.ok(!text.includes(password), `place ${index} shows no password`);
        assert.match(text, /llmuser:\*\*\*\*@/, `place ${index} shows the masked URL`);
      }
    } finally {
      await runCli(['stop'], { home });
      rmSync(home, { recursive: true, force: true });
      await upstream.close();
    }
  });
});
