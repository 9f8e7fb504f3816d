import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import OpenAI from 'openai';
import { parseTermStatistics, termStatistics, tokenize } from '../src/text/index.js';
import { recordedTurn, startProxy, tempHome, type ProxyHandle } from './support/proxy.js';
import { ScriptedUpstream } from './support/upstream.js';

const KUBERNETES_SKILL = `---
name: kubernetes-rollback
description: Use when a Kubernetes deployment rollout fails and must be rolled back safely.
---

# Roll back a Kubernetes deployment

1. Check the rollout with \`kubectl rollout status deployment/NAME\`.
2. Undo it with \`kubectl rollout undo deployment/NAME\`.
3. Watch the pods come back healthy before closing the incident.
`;

const STAGING_FACT = 'The staging database runs PostgreSQL 16 on db-staging.internal, port 6432; the nightly backup job writes to s3://acme-backups.';

/** A proxy in a fresh home, learning nothing on its own; `prepare` fills the home before the start. */
async function smallProxy(prepare: (home: string) => void): Promise<{ upstream: ScriptedUpstream; proxy: ProxyHandle; client: OpenAI }> {
  const upstream = await ScriptedUpstream.start();
  const home = tempHome();
  prepare(home);
  const proxy = await startProxy({
    home,
    config: { llm: { api_base: `${upstream.url}/v1`, api_key: 'k' }, skills: { auto_evolve: false }, memory: { auto_extract: false } },
  });
  return { upstream, proxy, client: new OpenAI({ baseURL: `${proxy.url}/v1`, apiKey: 'x', maxRetries: 0 }) };
}

/** What one main turn, in its own session, became: the system prompt the upstream received and the turn record's `added`. */
async function ask(client: OpenAI, upstream: ScriptedUpstream, proxy: ProxyHandle, question: string, session: string): Promise<{ system: string; added: any }> {
  const { response } = await client.chat.completions
    .create(
      {
        model: 'm',
        messages: [
          { role: 'system', content: 'You are a helpful agent.' },
          { role: 'user', content: question },
        ],
      },
      { headers: { 'X-Session-Id': session } },
    )
    .withResponse();
  const turn = await recordedTurn(proxy.url, response.headers.get('x-metaclaw-request-id')!);
  return { system: upstream.modelRequests().at(-1)!.body.messages[0].content as string, added: turn.added };
}

/** Each question, asked in its own session, gets nothing added: the turn record says so and the system prompt is forwarded as sent. */
async function assertNothingAdded(context: Awaited<ReturnType<typeof smallProxy>>, questions: ReadonlyArray<readonly [string, string]>): Promise<void> {
  for (const [question, session] of questions) {
    const unrelated = await ask(context.client, context.upstream, context.proxy, question, session);
    assert.equal(unrelated.added, null, question);
    assert.equal(unrelated.system, 'You are a helpful agent.', question);
  }
}

/** The names of the skills a turn record says were injected. */
function injectedSkills(added: any): string[] {
  const section = (added?.sections ?? []).find((item: { provider: string }) => item.provider === 'skills');
  return (section?.details.skills ?? []).map((skill: { name: string }) => skill.name);
}

describe('a library of one skill', () => {
  let context: Awaited<ReturnType<typeof smallProxy>>;
  before(async () => {
    context = await smallProxy((home) => {
      mkdirSync(join(home, 'skills', 'kubernetes-rollback'), { recursive: true });
      writeFileSync(join(home, 'skills', 'kubernetes-rollback', 'SKILL.md'), KUBERNETES_SKILL);
    });
  });
  after(async () => {
    await context?.proxy.dispose();
    await context?.upstream.close();
  });

  test('the matching request gets the skill injected (turn record and prompt); a greeting, a cooking question and a car seat to roll back get nothing', async () => {
    const { client, upstream, proxy } = context;
    const matching = await ask(client, upstream, proxy, 'My kubernetes deployment rollout failed, how do I roll back?', 'k8s');
    assert.deepEqual(injectedSkills(matching.added), ['kubernetes-rollback']);
    assert.match(matching.system, /<metaclaw-context>/);
    assert.match(matching.system, /### kubernetes-rollback/);
    assert.match(matching.system, /kubectl rollout undo/);
    await assertNothingAdded(context, [
      ['say hello', 'greeting'],
      ['how long should I proof sourdough overnight?', 'bread'],
      ['I need to roll back my car seat, it is too upright', 'car'],
    ]);
  });
});

describe('a memory of one unit', () => {
  let context: Awaited<ReturnType<typeof smallProxy>>;
  before(async () => {
    context = await smallProxy(() => {});
    const added = await fetch(`${context.proxy.url}/v1/memory`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ type: 'semantic', content: STAGING_FACT }),
    });
    assert.equal(added.status, 201);
  });
  after(async () => {
    await context?.proxy.dispose();
    await context?.upstream.close();
  });

  test('it is recalled for the question it answers; a greeting, a cooking question and one that only shares a common word with it get nothing', async () => {
    const { client, upstream, proxy } = context;
    // "write" is in the unit ("the backup job writes"): in a scope of one unit that is all the scope
    // knows of it, while the background statistics know it is one of the commonest verbs.
    await assertNothingAdded(context, [
      ['can you help me write a poem about the ocean', 'poem'],
      ['hi there!', 'greeting'],
      ['how long should I proof sourdough overnight?', 'bread'],
    ]);
    const matching = await ask(client, upstream, proxy, 'Which port does the staging database listen on?', 'port');
    assert.ok(
      (matching.added?.sections ?? []).some((item: { provider: string }) => item.provider === 'memory'),
      JSON.stringify(matching.added),
    );
    assert.match(matching.system, /db-staging\.internal, port 6432/);
  });
});

describe('the shipped term statistics (data/term-statistics.json)', () => {
  const statistics = termStatistics();

  test('hold English, Chinese and Japanese corpora of thousands of documents each', () => {
    for (const language of ['en', 'zh', 'ja']) assert.ok((statistics.documents[language] ?? 0) >= 10_000, language);
  });

  test('know common words as common and technical names as rare, in the terms the tokenizer makes', () => {
    const share = (text: string) => {
      const terms = tokenize(text);
      assert.equal(terms.length, 1, `"${text}" is one term`);
      return statistics.share(terms[0]!);
    };
    for (const [common, rare] of [
      ['time', 'kubernetes'],
      ['working', 'rollback'],
      ['问题', '数据'],
      ['時間', 'デプロイ'],
    ] as const) {
      assert.ok(share(common) > 0.02, `${common}: ${share(common)}`);
      assert.ok(share(rare) < share(common) / 20, `${rare}: ${share(rare)}`);
    }
  });

  test('a broken file is refused with the file and the fault named, never read as empty statistics', () => {
    const text = readFileSync(new URL('../data/term-statistics.json', import.meta.url), 'utf8');
    assert.doesNotThrow(() => parseTermStatistics(text, 'data/term-statistics.json'));
    const file = JSON.parse(text);
    file.languages.en.frequencies['999999999'] = 'time';
    assert.throws(() => parseTermStatistics(JSON.stringify(file), 'edited.json'), /edited\.json: en: .*999999999 documents of \d+/);
    delete file.languages.en.frequencies['999999999'];
    file.languages.en.frequencies['2'] += ' time';
    assert.throws(() => parseTermStatistics(JSON.stringify(file), 'edited.json'), /edited\.json: en: term "time" is empty or listed twice/);
    assert.throws(() => parseTermStatistics('{"version": 1}', 'edited.json'), /edited\.json: about/);
  });
});
