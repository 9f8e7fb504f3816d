import assert from 'node:assert/strict';
import { readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, beforeEach, describe, test } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { homeWithStarterSkills, startProxy, waitFor, type ProxyHandle } from './support/proxy.js';
import { ScriptedUpstream } from './support/upstream.js';

const GIT_QUESTION = 'my git commit history is a mess, how do I squash commits before merging?';

describe('skills are injected into main turns, for both APIs, streaming or not', () => {
  let upstream: ScriptedUpstream;
  let proxy: ProxyHandle;
  let openai: OpenAI;
  let anthropic: Anthropic;

  before(async () => {
    upstream = await ScriptedUpstream.start();
    const home = await homeWithStarterSkills();
    proxy = await startProxy({ home, config: { llm: { api_base: `${upstream.url}/v1`, api_key: 'k' } } });
    openai = new OpenAI({ baseURL: `${proxy.url}/v1`, apiKey: 'x', maxRetries: 0 });
    anthropic = new Anthropic({ baseURL: proxy.url, apiKey: 'x', maxRetries: 0 });
  });
  after(async () => {
    await proxy?.dispose();
    await upstream?.close();
  });
  beforeEach(() => upstream.reset());

  const lastBody = () => upstream.modelRequests().at(-1)!.body;

  test('OpenAI: one block appended to the existing system message, everything before it untouched', async () => {
    await openai.chat.completions.create({
      model: 'm',
      messages: [
        { role: 'system', content: 'You are a coding agent.' },
        { role: 'user', content: GIT_QUESTION },
      ],
    });
    const system = lastBody().messages[0];
    assert.equal(system.role, 'system');
    assert.ok(system.content.startsWith('You are a coding agent.\n\n<metaclaw-context>\n## Active Skills'), system.content.slice(0, 120));
    assert.match(system.content, /### git-commit-hygiene/);
    assert.ok(system.content.trimEnd().endsWith('</metaclaw-context>'));
    assert.equal(lastBody().messages[1].content, GIT_QUESTION);
    assert.equal(lastBody().messages.length, 2);
  });

  test('OpenAI: no system message gets one; content-part system prompts get a text part', async () => {
    await openai.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: GIT_QUESTION }] });
    assert.equal(lastBody().messages[0].role, 'system');
    assert.match(lastBody().messages[0].content, /^<metaclaw-context>/);
    await openai.chat.completions.create({
      model: 'm',
      messages: [
        { role: 'system', content: [{ type: 'text', text: 'Part one.' }] },
        { role: 'user', content: GIT_QUESTION },
      ],
    });
    const parts = lastBody().messages[0].content;
    assert.deepEqual(parts[0], { type: 'text', text: 'Part one.' });
    assert.match(parts[1].text, /git-commit-hygiene/);
  });

  test('OpenAI streaming requests are injected the same way', async () => {
    const stream = await openai.chat.completions.create({
      model: 'm',
      stream: true,
      messages: [
        { role: 'system', content: 'S.' },
        { role: 'user', content: GIT_QUESTION },
      ],
    });
    for await (const _chunk of stream) {
      // drain
    }
    assert.match(lastBody().messages[0].content, /### git-commit-hygiene/);
  });

  test('Anthropic: appended to a string system, added as a block after cached blocks, or created', async () => {
    const upstreamAnthropic = await ScriptedUpstream.start();
    const home = await homeWithStarterSkills();
    const anthropicProxy = await startProxy({ home, config: { llm: { api_base: upstreamAnthropic.url, api_format: 'anthropic', api_key: 'k' } } });
    try {
      const client = new Anthropic({ baseURL: anthropicProxy.url, apiKey: 'x', maxRetries: 0 });
      await client.messages.create({ model: 'c', max_tokens: 20, system: 'Base rules.', messages: [{ role: 'user', content: GIT_QUESTION }] });
      assert.match(upstreamAnthropic.modelRequests().at(-1)!.body.system, /^Base rules\.\n\n<metaclaw-context>[\s\S]*git-commit-hygiene/);
      await client.messages.create({
        model: 'c',
        max_tokens: 20,
        system: [{ type: 'text', text: 'Stable prefix.', cache_control: { type: 'ephemeral' } }],
        messages: [{ role: 'user', content: GIT_QUESTION }],
      });
      const blocks = upstreamAnthropic.modelRequests().at(-1)!.body.system;
      assert.deepEqual(blocks[0], { type: 'text', text: 'Stable prefix.', cache_control: { type: 'ephemeral' } }, 'the cached prefix is untouched');
      assert.match(blocks[1].text, /git-commit-hygiene/);
      const stream = client.messages.stream({ model: 'c', max_tokens: 20, messages: [{ role: 'user', content: GIT_QUESTION }] });
      await stream.finalMessage();
      assert.match(upstreamAnthropic.modelRequests().at(-1)!.body.system, /^<metaclaw-context>/);
    } finally {
      await anthropicProxy.dispose();
      await upstreamAnthropic.close();
    }
    void anthropic;
  });

  test('side turns and off-topic requests get nothing', async () => {
    await openai.chat.completions.create(
      {
        model: 'm',
        messages: [
          { role: 'system', content: 'S.' },
          { role: 'user', content: GIT_QUESTION },
        ],
      },
      { headers: { 'X-Turn-Type': 'side' } },
    );
    assert.equal(lastBody().messages[0].content, 'S.');
    await openai.chat.completions.create({
      model: 'm',
      messages: [
        { role: 'system', content: 'S.' },
        { role: 'user', content: 'how long should I proof sourdough overnight?' },
      ],
    });
    assert.equal(lastBody().messages[0].content, 'S.');
  });

  test('the same request renders the same bytes every turn (prompt caches survive)', async () => {
    const ask = () =>
      openai.chat.completions.create({
        model: 'm',
        messages: [
          { role: 'system', content: 'S.' },
          { role: 'user', content: 'write a SQL query joining orders to customers, it is slow, need an index?' },
        ],
      });
    await ask();
    await ask();
    const [first, second] = upstream
      .modelRequests()
      .slice(-2)
      .map((request) => request.body.messages[0].content);
    assert.equal(first, second);
    assert.match(first, /sql-query-writing/);
  });

  test('GET /v1/requests/{id} shows what was injected with scores, and the credit is counted', async () => {
    const { response } = await openai.chat.completions
      .create({ model: 'm', messages: [{ role: 'user', content: GIT_QUESTION }] }, { headers: { 'X-Session-Id': 'credit-session' } })
      .withResponse();
    const explained = (await (await fetch(`${proxy.url}/v1/requests/${response.headers.get('x-metaclaw-request-id')}`)).json()) as any;
    const section = explained.added.sections.find((item: { provider: string }) => item.provider === 'skills');
    const shown = section.details.skills.find((skill: { name: string }) => skill.name === 'git-commit-hygiene');
    assert.ok(shown.relevance >= 0.35 && shown.relevance <= 1);
    assert.equal(shown.full, true);
    assert.equal(typeof explained.added.tokens, 'number');
    const listed = (await (await fetch(`${proxy.url}/v1/skills/git-commit-hygiene`)).json()) as any;
    assert.ok(listed.credit.injected >= 1);
    assert.ok(listed.recent_sessions.includes('credit-session'));
  });

  test('a hand edit takes effect on the next request, without a restart', async () => {
    const file = join(proxy.home, 'skills', 'git-commit-hygiene', 'SKILL.md');
    writeFileSync(file, readFileSync(file, 'utf8').replace('# Focused Git Commits', '# Focused Git Commits\n\nHAND-EDIT-MARKER: always sign commits.'));
    await waitFor(
      async () => {
        await openai.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: GIT_QUESTION }] });
        return lastBody().messages[0].content.includes('HAND-EDIT-MARKER');
      },
      10_000,
      200,
    );
  });

  test('an invalid SKILL.md is skipped with its reason in /status, and serving goes on', async () => {
    mkdirSync(join(proxy.home, 'skills', 'bad-skill'), { recursive: true });
    writeFileSync(join(proxy.home, 'skills', 'bad-skill', 'SKILL.md'), '---\nname: other-name\ndescription: mismatched\n---\nbody\n');
    const invalid = await waitFor(
      async () => {
        const status = (await (await fetch(`${proxy.url}/status`)).json()) as any;
        return status.skills.invalid_files.find((problem: { path: string }) => problem.path.includes('bad-skill'));
      },
      10_000,
      200,
    );
    assert.match(invalid.reason, /must equal the folder name "bad-skill"/);
    const completion = await openai.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: GIT_QUESTION }] });
    assert.ok(completion.choices[0]!.message.content);
    const doctor = await proxy.cli(['skills', 'doctor']);
    assert.equal(doctor.code, 1);
    assert.match(doctor.stdout, /INVALID .*bad-skill.*must equal the folder name/);
  });
});
