import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { embeddingsHandler } from './support/embeddings.js';
import { freePort, runCli, startProxy, tempHome, waitFor, type ProxyHandle } from './support/proxy.js';
import { englishOnlyStarter } from './support/skill-banks.js';
import { json, openAIReply, ScriptedUpstream, type Handler } from './support/upstream.js';

interface Retrieval {
  mode: string;
  reason: string;
  model: string | null;
}

interface Status {
  skills: { retrieval: Retrieval; embedded: number; retrieval_mode: string };
  memory: { retrieval: Retrieval };
}

/** A provider that answers chat, lists models on GET, and answers /v1/embeddings or 404s it. */
function provider(embeddings: 'answer' | '404'): Handler {
  const embed = embeddingsHandler();
  return (request, response) => {
    if (request.path.endsWith('/embeddings'))
      return embeddings === 'answer' ? embed(request, response) : json(response, 404, { error: { message: 'no such route: /v1/embeddings' } });
    if (request.method === 'GET') return json(response, 200, { object: 'list', data: [{ id: 'gpt-4o', object: 'model' }] });
    return openAIReply({ text: 'OK' })(request, response);
  };
}

async function status(proxy: ProxyHandle): Promise<Status> {
  return (await (await fetch(`${proxy.url}/status`)).json()) as Status;
}

/** The `retrieval` line of `metaclaw doctor`. */
async function doctorRetrieval(home: string, env: Record<string, string> = {}): Promise<string> {
  const result = await runCli(['doctor', '--no-canary'], { home, env });
  const line = result.stdout.split('\n').find((text) => text.includes(' retrieval: '));
  assert.ok(line, result.stdout + result.stderr);
  return line;
}

describe('embeddings on by default where the provider offers them', () => {
  let upstream: ScriptedUpstream;
  const proxies: ProxyHandle[] = [];
  before(async () => {
    upstream = await ScriptedUpstream.start();
  });
  after(async () => {
    for (const proxy of proxies) await proxy.dispose();
    await upstream.close();
  });

  async function start(embeddings: 'answer' | '404', extra: Record<string, unknown> = {}): Promise<ProxyHandle> {
    upstream.defaultHandler = provider(embeddings);
    const home = tempHome();
    englishOnlyStarter(join(home, 'skills'));
    const proxy = await startProxy({
      home,
      config: { llm: { provider: 'openai', api_base: `${upstream.url}/v1`, api_key: 'k', model_id: 'gpt-4o' }, skills: { auto_evolve: false }, ...extra },
    });
    proxies.push(proxy);
    return proxy;
  }

  test('an OpenAI preset whose embeddings endpoint answers at start gets hybrid retrieval for skills and memory, and /status and doctor say why', async () => {
    const proxy = await start('answer');
    const report = await waitFor(async () => {
      const current = await status(proxy);
      return current.skills.retrieval.mode === 'hybrid' && current.skills.embedded > 0 ? current : undefined;
    }, 20_000);
    assert.equal(report.skills.retrieval_mode, 'hybrid');
    assert.equal(report.skills.retrieval.model, 'text-embedding-3-small');
    assert.match(report.skills.retrieval.reason, /text-embedding-3-small at http:\/\/127\.0\.0\.1:\d+\/v1 answered at start \(64 dimensions\)/);
    assert.equal(report.memory.retrieval.mode, 'hybrid');
    // The skills were embedded with the provider's model: serving started before the probe answered.
    const embedded = upstream.requests.filter((request) => request.path === '/v1/embeddings');
    assert.ok(embedded.some((request) => request.body.model === 'text-embedding-3-small' && request.body.input.length > 1));
    assert.match(
      await doctorRetrieval(proxy.home),
      /retrieval: skills hybrid \(text-embedding-3-small\): .*answered at start.*; memory hybrid \(text-embedding-3-small\)/,
    );
  });

  test('an embeddings endpoint that answers 404 leaves keyword retrieval, with the 404 as the reason in /status and doctor', async () => {
    const proxy = await start('404');
    const report = await waitFor(async () => {
      const current = await status(proxy);
      return /404/.test(current.skills.retrieval.reason) ? current : undefined;
    }, 20_000);
    assert.equal(report.skills.retrieval.mode, 'keyword');
    assert.equal(report.skills.retrieval_mode, 'template');
    assert.equal(report.memory.retrieval.mode, 'keyword');
    assert.match(report.skills.retrieval.reason, /text-embedding-3-small at .* did not answer at start: embeddings endpoint answered 404/);
    assert.match(await doctorRetrieval(proxy.home), /retrieval: skills keyword: text-embedding-3-small .*404.*; memory keyword: /);
  });

  test('a retrieval mode set in config wins over the provider probe', async () => {
    const proxy = await start('answer', { skills: { auto_evolve: false, retrieval_mode: 'template' }, memory: { retrieval_mode: 'keyword' } });
    // The probe still runs and is stored; the configured modes stay.
    await waitFor(() => upstream.requests.some((request) => request.path === '/v1/embeddings' && request.body.input[0] === 'ping'), 20_000);
    await proxy.stop();
    assert.match(
      await doctorRetrieval(proxy.home),
      /at the next start: skills keyword: skills\.retrieval_mode is template in config; memory keyword: memory\.retrieval_mode is keyword in config/,
    );
  });

  test('setup probes the embeddings endpoint and stores what it found, so doctor reports hybrid retrieval for the next start', async () => {
    upstream.defaultHandler = provider('answer');
    const home = tempHome('metaclaw-setup-');
    try {
      const port = await freePort();
      const setup = await runCli(
        [
          'setup',
          '--yes',
          '--provider',
          'openai',
          '--api-base',
          `${upstream.url}/v1`,
          '--api-key-env',
          'TEST_KEY',
          '--claw',
          'none',
          '--port',
          String(port),
          '--no-starter-skills',
        ],
        { home, env: { TEST_KEY: 'k' } },
      );
      assert.equal(setup.code, 0, setup.stderr);
      assert.match(setup.stdout, /Retrieval: skills hybrid, memory hybrid \(text-embedding-3-small at .* answered at setup \(64 dimensions\)\)/);
      assert.match(await doctorRetrieval(home, { TEST_KEY: 'k' }), /at the next start: skills hybrid \(text-embedding-3-small\): .*answered at setup/);
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });
});
