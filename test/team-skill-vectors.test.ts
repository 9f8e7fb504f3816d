/**
 * Skill retrieval with embeddings on a node of a team: with skills.embedding.* set, a node embeds
 * the team's skills (in memory, as its mirror fills and changes) and finds a skill that no keyword
 * links to the request; without it, the node says why it finds skills by keyword. The scripted
 * embeddings give the invented "zorblat" and "quuxer" the meaning of "kubernetes" and "rollout".
 */
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { before, describe, test } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import OpenAI from 'openai';
import { embeddingsHandler } from './support/embeddings.js';
import { postgresSkip } from './support/postgres.js';
import { CLI, cleanEnv, startProxy, tempHome, waitFor, type ProxyHandle } from './support/proxy.js';
import { teamForTests, teamHelpers } from './support/team.js';
import { openAIReply } from './support/upstream.js';

const OWNER_KEY = 'owner-key-for-the-team-skill-vectors-test';
const REQUEST = 'my zorblat quuxer is stuck, what now?';
const team = teamForTests('team_skill_vectors');
const { cli, teamEnv } = teamHelpers(() => team, OWNER_KEY, {});

interface SkillsStatus {
  embedded: number;
  retrieval: { mode: string; reason: string; model: string | null };
}

async function skillsStatus(node: ProxyHandle): Promise<SkillsStatus> {
  const status = (await (await fetch(`${node.url}/status`, { headers: { authorization: `Bearer ${OWNER_KEY}` } })).json()) as { skills: SkillsStatus };
  return status.skills;
}

/** Whether the last request the node sent upstream for REQUEST carried the skill. */
async function injected(node: ProxyHandle, session: string): Promise<boolean> {
  const client = new OpenAI({ baseURL: `${node.url}/v1`, apiKey: OWNER_KEY, maxRetries: 0 });
  await client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: REQUEST }] }, { headers: { 'x-session-id': session } });
  const sent = team.upstream.modelRequests().findLast((request) => request.path.endsWith('/chat/completions') && request.raw.includes('zorblat'));
  assert.ok(sent, 'the upstream got the request');
  return /### rollback-kubernetes/.test(sent.raw);
}

/** The skills `metaclaw mcp` run with `home`'s config on the team store finds for REQUEST. */
async function mcpSkillsSearch(home: string): Promise<string[]> {
  const env = Object.fromEntries(Object.entries(cleanEnv(home, teamEnv())).filter((entry): entry is [string, string] => entry[1] !== undefined));
  const client = new Client({ name: 'metaclaw-team-test', version: '1.0.0' });
  await client.connect(new StdioClientTransport({ command: process.execPath, args: [CLI, 'mcp'], env, stderr: 'pipe' }));
  try {
    const result = (await client.callTool({ name: 'skills_search', arguments: { query: REQUEST } })) as { content: Array<{ text?: string }> };
    return (JSON.parse(result.content[0]?.text ?? '[]') as Array<{ name: string }>).map((skill) => skill.name);
  } finally {
    await client.close();
  }
}

describe('skills with embeddings on a node of a team', { skip: postgresSkip() }, () => {
  let embedding: ProxyHandle;
  let keyword: ProxyHandle;

  before(async () => {
    const embed = embeddingsHandler(
      () => false,
      new Map([
        ['zorblat', 'kubernetes'],
        ['quuxer', 'rollout'],
      ]),
    );
    team.upstream.defaultHandler = (request, response) =>
      request.path.endsWith('/embeddings') ? embed(request, response) : openAIReply({ text: 'ok' })(request, response);
    await cli(['store', 'migrate']);
    const folder = join(tempHome('metaclaw-team-skill-vectors-'), 'rollback-kubernetes');
    mkdirSync(folder, { recursive: true });
    writeFileSync(
      join(folder, 'SKILL.md'),
      '---\nname: rollback-kubernetes\ndescription: Use when a Kubernetes rollout fails.\ncategory: devops\n---\n\nKubernetes rollout undo.\n',
    );
    await cli(['skills', 'add', join(folder, 'SKILL.md')]);
    const llm = { api_base: `${team.upstream.url}/v1`, api_key: 'upstream-key' };
    embedding = await startProxy({
      env: teamEnv(),
      config: { llm, skills: { retrieval_mode: 'embedding', embedding: { api_base: `${team.upstream.url}/v1`, model: 'bow-64' } } },
    });
    keyword = await startProxy({ env: teamEnv(), config: { llm } });
    team.nodes.push(embedding, keyword);
  });

  test('a node with skills.embedding set embeds the team library and injects a skill only a vector links to the request', async () => {
    await waitFor(async () => (await skillsStatus(embedding)).embedded === 1, 15_000, 100);
    const status = await skillsStatus(embedding);
    assert.equal(status.retrieval.mode, 'embedding');
    assert.equal(status.retrieval.model, 'bow-64');
    // The first request does not wait for its query's vector; the same request finds the skill once it is known.
    let tries = 0;
    await waitFor(async () => injected(embedding, `vectors-${++tries}`), 10_000, 100);
  });

  test('a node without skills.embedding finds skills by keyword, says why in /status, and does not inject that skill', async () => {
    const status = await skillsStatus(keyword);
    assert.equal(status.retrieval.mode, 'keyword');
    assert.match(status.retrieval.reason, /does not probe the provider.*skills\.embedding\.api_base/);
    assert.equal(status.embedded, 0);
    assert.equal(await injected(keyword, 'keyword-1'), false);
  });

  test("`metaclaw mcp` with a node's config searches the team's skills as that node does: by meaning with skills.embedding set, by keyword without", async () => {
    assert.deepEqual(await mcpSkillsSearch(embedding.home), ['rollback-kubernetes']);
    assert.deepEqual(await mcpSkillsSearch(keyword.home), []);
  });
});
