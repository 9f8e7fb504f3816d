import assert from 'node:assert/strict';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import OpenAI from 'openai';
import { after, describe, test } from 'node:test';
import { learningAwareUpstream } from './support/evolver.js';
import { bagOfWords, embeddingsHandler } from './support/embeddings.js';
import { runCli, searchMemory, startProxy, tempHome, waitFor, type ProxyHandle } from './support/proxy.js';
import { ScriptedUpstream } from './support/upstream.js';

const homes: string[] = [];
after(() => {
  for (const folder of homes) rmSync(folder, { recursive: true, force: true });
});
function newHome(): string {
  const folder = tempHome('metaclaw-memory-settings-');
  homes.push(folder);
  return folder;
}

/** A scripted upstream that answers chat and, deterministically, embeddings (bag-of-words vectors). */
async function embeddingUpstream(): Promise<ScriptedUpstream> {
  const upstream = await ScriptedUpstream.start();
  const embeddings = embeddingsHandler();
  upstream.defaultHandler = (request, response) =>
    request.path.endsWith('/embeddings') ? embeddings(request, response) : learningAwareUpstream({})(request, response);
  return upstream;
}

function memoryConfig(upstream: ScriptedUpstream, memory: Record<string, unknown>): Record<string, unknown> {
  return {
    llm: { api_base: `${upstream.url}/v1`, api_key: 'k' },
    skills: { enabled: false },
    memory: { auto_extract: false, embedding: { api_base: `${upstream.url}/v1`, model: 'embed-1' }, ...memory },
  };
}

async function remember(proxy: ProxyHandle, content: string): Promise<void> {
  const response = await fetch(`${proxy.url}/v1/memory`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ type: 'semantic', content }),
  });
  assert.equal(response.status, 201);
}

/** Resolves once every text was sent to the embeddings endpoint and no learning job is queued or running (the vectors are stored). */
async function embedded(proxy: ProxyHandle, upstream: ScriptedUpstream, texts: string[]): Promise<void> {
  await waitFor(
    async () => {
      const sent = upstream.requests.filter((request) => request.path === '/v1/embeddings').flatMap((request) => request.body.input as string[]);
      if (!texts.every((text) => sent.includes(text))) return false;
      const status = (await (await fetch(`${proxy.url}/status`)).json()) as { queue: { queued: number; leased: number } };
      return status.queue.queued + status.queue.leased === 0;
    },
    15_000,
    100,
  );
}

const bucket = (word: string) => bagOfWords(word).indexOf(1);

/** A made-up word that shares no letters' meaning with `word` but lands in its vector bucket: only vectors relate them. */
function vectorTwin(word: string): string {
  for (let index = 0; ; index++) {
    const candidate = `zorp${index.toString(26).replace(/\d/g, (digit) => 'qrstuvwxyz'[Number(digit)]!)}`;
    if (bucket(candidate) === bucket(word)) return candidate;
  }
}

describe('memory settings act on a running proxy', () => {
  test('memory.retrieval_mode keyword: recall uses words alone, even where vectors exist; hybrid also finds by vector', async () => {
    const upstream = await embeddingUpstream();
    const home = newHome();
    const text = 'Quarterly ledger reconciliation';
    const twin = vectorTwin('ledger');
    let proxy = await startProxy({ home, config: memoryConfig(upstream, {}) });
    try {
      await remember(proxy, text);
      await embedded(proxy, upstream, [text]);
      assert.deepEqual(await searchMemory(proxy, twin), [text], 'hybrid (the default) finds the unit by its vector alone');
      await proxy.stop();

      proxy = await startProxy({ home, config: memoryConfig(upstream, { retrieval_mode: 'keyword' }) });
      upstream.reset();
      assert.deepEqual(await searchMemory(proxy, twin), [], 'keyword mode does not use the vector');
      assert.deepEqual(await searchMemory(proxy, 'ledger reconciliation'), [text]);
      assert.equal(upstream.requests.filter((request) => request.path === '/v1/embeddings').length, 0, 'no query was embedded');
      const status = (await (await fetch(`${proxy.url}/status`)).json()) as { memory: { retrieval_mode: string } };
      assert.equal(status.memory.retrieval_mode, 'keyword');
    } finally {
      await proxy.stop();
      await upstream.close();
    }
  });

  test('memory.retrieval_mode embedding: vector similarity alone decides, so a long unit that merely contains the word is not recalled', async () => {
    const upstream = await embeddingUpstream();
    const home = newHome();
    const proxy = await startProxy({ home, config: memoryConfig(upstream, { retrieval_mode: 'embedding' }) });
    const focused = 'frobnicator warehouse';
    const filler = [
      'alpha',
      'bravo',
      'charlie',
      'delta',
      'echo',
      'foxtrot',
      'golf',
      'hotel',
      'india',
      'juliet',
      'kilo',
      'lima',
      'mike',
      'november',
      'oscar',
      'papa',
      'quebec',
      'romeo',
      'sierra',
      'tango',
      'uniform',
      'victor',
      'whiskey',
      'xray',
      'yankee',
      'zulu',
    ];
    // the long unit's vector is far from the query's: its other words never share the query's bucket
    const diluted = `frobnicator ${filler.filter((word) => bucket(word) !== bucket('frobnicator')).join(' ')}`;
    try {
      await remember(proxy, focused);
      await remember(proxy, diluted);
      await embedded(proxy, upstream, [focused, diluted]);
      assert.deepEqual(await searchMemory(proxy, 'frobnicator'), [focused]);
    } finally {
      await proxy.stop();
      await upstream.close();
    }
  });

  test('injection never waits for the query vector: a request recalls by words at once, and by vector once its text was embedded in the background', async () => {
    const upstream = await embeddingUpstream();
    const home = newHome();
    const text = 'Quarterly ledger reconciliation';
    const proxy = await startProxy({ home, config: memoryConfig(upstream, {}) });
    try {
      await remember(proxy, text);
      await embedded(proxy, upstream, [text]);
      const question = vectorTwin('ledger');
      const client = new OpenAI({ baseURL: `${proxy.url}/v1`, apiKey: 'x', maxRetries: 0 });
      const recalled = async (): Promise<number> => {
        const { response } = await client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: question }] }).withResponse();
        const explained = (await (await fetch(`${proxy.url}/v1/requests/${response.headers.get('x-metaclaw-request-id')}`)).json()) as {
          added: { sections: Array<{ provider: string; details: { recalled: unknown[] } }> } | null;
        };
        return explained.added?.sections.find((section) => section.provider === 'memory')?.details.recalled.length ?? 0;
      };
      assert.equal(await recalled(), 0, 'the first request went on without the vector (only it relates the question to the memory)');
      await waitFor(() => upstream.requests.some((request) => request.path === '/v1/embeddings' && request.body.input[0] === question), 10_000, 20);
      await waitFor(async () => (await recalled()) === 1, 10_000, 50);
    } finally {
      await proxy.stop();
      await upstream.close();
    }
  });

  test('memory.auto_consolidate false: housekeeping leaves near-duplicates as they are', async () => {
    const upstream = await ScriptedUpstream.start();
    const home = newHome();
    for (const content of ['The user prefers dark mode in every editor.', 'The user prefers dark mode in every editor!']) {
      assert.equal((await runCli(['memory', 'add', content, '--type', 'preference'], { home })).code, 0);
    }
    const proxy = await startProxy({
      home,
      config: { llm: { api_base: `${upstream.url}/v1`, api_key: 'k' }, skills: { enabled: false }, memory: { auto_extract: false, auto_consolidate: false } },
    });
    try {
      const log = join(home, 'logs', 'metaclaw.log');
      const done = await waitFor(
        () =>
          existsSync(log) &&
          readFileSync(log, 'utf8')
            .split('\n')
            .find((line) => line.includes('memory housekeeping done')),
        15_000,
        100,
      );
      assert.equal(JSON.parse(done).report.consolidated, 0);
      const found = JSON.parse((await runCli(['memory', 'search', 'dark mode editor', '--all', '--json'], { home })).stdout) as Array<{ status: string }>;
      assert.deepEqual(
        found.map((unit) => unit.status),
        ['active', 'active'],
      );
    } finally {
      await proxy.stop();
      await upstream.close();
    }
  });
});
