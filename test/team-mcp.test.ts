/**
 * `metaclaw mcp` on a node of a team: with store.url (here METACLAW_DATABASE_URL) set, the MCP
 * tools and skill resources are the team store's, which every node serves from, and the skill
 * list follows the team's library live; nothing is read from or written to the install's own
 * database or skill folder, which no node reads.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ErrorCode, McpError, ResourceListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { sendJson } from './support/http.js';
import { postgresSkip } from './support/postgres.js';
import { CLI, cleanEnv, startProxy, tempHome, waitFor, type ProxyHandle } from './support/proxy.js';
import { teamForTests, teamHelpers } from './support/team.js';

const OWNER_KEY = 'owner-key-for-the-team-mcp-test';
const team = teamForTests('team_mcp');
const { cli, teamEnv } = teamHelpers(() => team, OWNER_KEY, {});

type TextResult = { content: Array<{ type: string; text?: string }>; isError?: boolean };
const textOf = (result: unknown) => (result as TextResult).content[0]?.text ?? '';

/** A SKILL.md in a folder of its own, for `metaclaw skills add`. */
function skillFile(name: string, description: string, body: string): string {
  const folder = join(tempHome('metaclaw-team-mcp-skill-'), name);
  mkdirSync(folder, { recursive: true });
  const file = join(folder, 'SKILL.md');
  writeFileSync(file, `---\nname: ${name}\ndescription: ${description}\ncategory: devops\n---\n\n${body}\n`);
  return file;
}

describe('metaclaw mcp with a team store', { skip: postgresSkip() }, () => {
  let node: ProxyHandle;
  let client: Client;
  let listChanges = 0;

  before(async () => {
    await cli(['store', 'migrate']);
    await cli([
      'skills',
      'add',
      skillFile(
        'rollback-kubernetes',
        'Use when a Kubernetes deployment rollout fails and must be rolled back safely.',
        '# Roll back\n\nRun `kubectl rollout undo`.',
      ),
    ]);
    node = await startProxy({ env: teamEnv(), config: { llm: { api_base: `${team.upstream.url}/v1`, api_key: 'upstream-key' } } });
    team.nodes.push(node);
    const env = Object.fromEntries(Object.entries(cleanEnv(team.seed, teamEnv())).filter((entry): entry is [string, string] => entry[1] !== undefined));
    client = new Client({ name: 'metaclaw-team-test', version: '1.0.0' });
    client.setNotificationHandler(ResourceListChangedNotificationSchema, () => {
      listChanges++;
    });
    await client.connect(new StdioClientTransport({ command: process.execPath, args: [CLI, 'mcp'], env, stderr: 'pipe' }));
  });
  after(async () => {
    await client?.close();
  });

  test("the team's skills are the resources (SKILL.md as stored), skills_search finds one for a task and skills_get returns it", async () => {
    const { resources } = await client.listResources();
    assert.deepEqual(
      resources.map((resource) => resource.uri),
      ['skill://rollback-kubernetes'],
    );
    const read = (await client.readResource({ uri: 'skill://rollback-kubernetes' })).contents[0] as { text: string };
    assert.match(read.text, /^---\nname: rollback-kubernetes\n/, 'the stored SKILL.md with its frontmatter');
    assert.match(read.text, /kubectl rollout undo/);
    const found = JSON.parse(
      textOf(await client.callTool({ name: 'skills_search', arguments: { query: 'My kubernetes deployment rollout failed, how do I roll back?' } })),
    ) as Array<{ name: string }>;
    assert.deepEqual(
      found.map((hit) => hit.name),
      ['rollback-kubernetes'],
    );
    assert.match(textOf(await client.callTool({ name: 'skills_get', arguments: { name: 'rollback-kubernetes' } })), /kubectl rollout undo/);
    await assert.rejects(client.readResource({ uri: 'skill://no-such-skill' }), (error: unknown) => {
      assert.ok(error instanceof McpError, String(error));
      assert.equal(error.code, ErrorCode.InvalidParams);
      return true;
    });
    // The install's own skill folder stays as it was: the library is the team's.
    const personal = join(team.seed, 'skills');
    assert.deepEqual(existsSync(personal) ? readdirSync(personal) : [], []);
  });

  test('a memory added through MCP is a row of the team store that a running node finds; memory_forget deletes it there', async () => {
    const added = JSON.parse(
      textOf(
        await client.callTool({ name: 'memory_add', arguments: { content: 'The team deploys the billing service with Argo CD.', type: 'project_state' } }),
      ),
    ) as { id: string; scope: string };
    assert.equal(added.scope, 'default');
    const row = await team.pool.query<{ content: string }>('SELECT content FROM memory_units WHERE id = $1', [added.id]);
    assert.equal(row.rows[0]?.content, 'The team deploys the billing service with Argo CD.');
    const viaNode = await sendJson(`${node.url}/v1/memory/search`, 'POST', {
      headers: { authorization: `Bearer ${OWNER_KEY}` },
      body: { query: 'how is billing deployed?' },
    });
    assert.equal(viaNode.status, 200, JSON.stringify(viaNode.body));
    assert.ok(
      (viaNode.body.results as Array<{ id: string }>).some((hit) => hit.id === added.id),
      'the node serves what MCP wrote',
    );
    const viaMcp = JSON.parse(textOf(await client.callTool({ name: 'memory_search', arguments: { query: 'Argo CD billing' } }))) as Array<{ id: string }>;
    assert.equal(viaMcp[0]?.id, added.id);

    const forgotten = (await client.callTool({ name: 'memory_forget', arguments: { id: added.id } })) as TextResult;
    assert.notEqual(forgotten.isError, true, textOf(forgotten));
    assert.equal((await team.pool.query('SELECT 1 FROM memory_units WHERE id = $1', [added.id])).rowCount, 0);
    const twice = (await client.callTool({ name: 'memory_forget', arguments: { id: added.id } })) as TextResult;
    assert.equal(twice.isError, true);
  });

  test('a skill added to the team (here with `metaclaw skills add`) while a client is connected sends list_changed, and the new list has it; removed, it goes', async () => {
    const seen = listChanges;
    await cli([
      'skills',
      'add',
      skillFile('rotate-tls-certificates', 'Use when TLS certificates expire and must be rotated without downtime.', '# Rotate\n\nRenew, then reload.'),
    ]);
    await waitFor(async () => listChanges > seen, 15_000, 100);
    assert.deepEqual((await client.listResources()).resources.map((resource) => resource.uri).sort(), [
      'skill://rollback-kubernetes',
      'skill://rotate-tls-certificates',
    ]);
    const afterAdd = listChanges;
    await cli(['skills', 'remove', 'rotate-tls-certificates']);
    await waitFor(async () => listChanges > afterAdd, 15_000, 100);
    assert.deepEqual(
      (await client.listResources()).resources.map((resource) => resource.uri),
      ['skill://rollback-kubernetes'],
    );
  });
});
