import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import Database from 'better-sqlite3';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ErrorCode, McpError, ResourceListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CLI, cleanEnv, homeWithStarterSkills, runCli, startProxy, tempHome, type ProxyHandle } from './support/proxy.js';
import { ScriptedUpstream } from './support/upstream.js';

type TextResult = { content: Array<{ type: string; text?: string }>; isError?: boolean };
const textOf = (result: unknown) => (result as TextResult).content[0]?.text ?? '';

/**
 * `metaclaw mcp` driven by the MCP SDK's own client over stdio, beside a running proxy on the
 * same METACLAW_HOME: tools and skill resources listed, each tool called, bad arguments refused,
 * and a memory added through MCP found by the proxy (and the reverse).
 */
describe('metaclaw mcp (Model Context Protocol over stdio)', () => {
  let upstream: ScriptedUpstream;
  let proxy: ProxyHandle;
  let client: Client;

  before(async () => {
    upstream = await ScriptedUpstream.start();
    const home = await homeWithStarterSkills();
    proxy = await startProxy({ home, config: { llm: { api_base: `${upstream.url}/v1`, api_key: 'k' } } });
    const env = Object.fromEntries(Object.entries(cleanEnv(home)).filter((entry): entry is [string, string] => entry[1] !== undefined));
    client = new Client({ name: 'metaclaw-test', version: '1.0.0' });
    await client.connect(new StdioClientTransport({ command: process.execPath, args: [CLI, 'mcp'], env, stderr: 'pipe' }));
  });
  after(async () => {
    await client?.close();
    await proxy?.dispose();
    await upstream?.close();
  });

  test('lists the five tools and every skill as a resource', async () => {
    const { tools } = await client.listTools();
    assert.deepEqual(tools.map((tool) => tool.name).sort(), ['memory_add', 'memory_forget', 'memory_search', 'skills_get', 'skills_search']);
    const search = tools.find((tool) => tool.name === 'memory_search')!;
    assert.deepEqual(search.inputSchema.required, ['query']);
    const { resources } = await client.listResources();
    assert.ok(resources.length >= 40, `the starter skills: ${resources.length}`);
    const first = resources[0]!;
    assert.match(first.uri, /^skill:\/\/[a-z0-9-]+$/);
    const read = await client.readResource({ uri: first.uri });
    const contents = read.contents[0] as { text: string; mimeType: string };
    assert.equal(contents.mimeType, 'text/markdown');
    assert.match(contents.text, /^---\nname: /, 'the SKILL.md with its frontmatter');
  });

  test('reading a skill resource that does not exist is an invalid-params error naming it, not an internal error', async () => {
    await assert.rejects(client.readResource({ uri: 'skill://no-such-skill' }), (error: unknown) => {
      assert.ok(error instanceof McpError, String(error));
      assert.equal(error.code, ErrorCode.InvalidParams);
      assert.match(error.message, /no-such-skill/);
      return true;
    });
  });

  test('skills_search finds the skill for a task and skills_get returns it; an unknown name is an error result', async () => {
    const found = JSON.parse(
      textOf(await client.callTool({ name: 'skills_search', arguments: { query: 'how do I squash my git commits before merging?' } })),
    ) as Array<{
      name: string;
      relevance: number;
    }>;
    assert.ok(found.length > 0);
    assert.match(found[0]!.name, /git/);
    const skill = await client.callTool({ name: 'skills_get', arguments: { name: found[0]!.name } });
    assert.match(textOf(skill), new RegExp(`name: ${found[0]!.name}`));
    const missing = (await client.callTool({ name: 'skills_get', arguments: { name: 'no-such-skill' } })) as TextResult;
    assert.equal(missing.isError, true);
    assert.match(textOf(missing), /No skill named no-such-skill/);
  });

  test('memory_add through MCP is found by the running proxy; memory_search finds it; memory_forget deletes it for good', async () => {
    const added = JSON.parse(
      textOf(await client.callTool({ name: 'memory_add', arguments: { content: 'The user deploys with Kamal to a Hetzner box.', type: 'project_state' } })),
    ) as {
      id: string;
    };
    assert.ok(added.id);
    const viaProxy = (await (
      await fetch(`${proxy.url}/v1/memory/search`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ query: 'how does the user deploy?' }),
      })
    ).json()) as { results: Array<{ id: string }> };
    assert.ok(
      viaProxy.results.some((hit) => hit.id === added.id),
      'the proxy sees what MCP wrote',
    );
    const viaMcp = JSON.parse(textOf(await client.callTool({ name: 'memory_search', arguments: { query: 'Kamal deploy', limit: 5 } }))) as Array<{
      id: string;
    }>;
    assert.equal(viaMcp[0]?.id, added.id);

    const forgotten = (await client.callTool({ name: 'memory_forget', arguments: { id: added.id } })) as TextResult;
    assert.notEqual(forgotten.isError, true);
    const again = JSON.parse(textOf(await client.callTool({ name: 'memory_search', arguments: { query: 'Kamal deploy' } }))) as Array<{ id: string }>;
    assert.ok(!again.some((hit) => hit.id === added.id));
    const twice = (await client.callTool({ name: 'memory_forget', arguments: { id: added.id } })) as TextResult;
    assert.equal(twice.isError, true);
  });

  test('bad arguments are refused with the reason, and nothing is written', async () => {
    const before = await (await fetch(`${proxy.url}/v1/memory/stats`)).json();
    const refused = async (name: string, args: Record<string, unknown>) => {
      let result: TextResult;
      try {
        result = (await client.callTool({ name, arguments: args })) as TextResult;
      } catch (error) {
        // A protocol error (an unknown tool) is a refusal too; anything else is the test's failure.
        if (!(error instanceof McpError)) throw error;
        return error.message;
      }
      // Outside the try: a call that succeeded must fail the test, not pass as a refusal whose text names the argument.
      assert.equal(result.isError, true, `${name} ${JSON.stringify(args)} was accepted: ${textOf(result)}`);
      return textOf(result);
    };
    assert.match(await refused('memory_search', {}), /query/);
    assert.match(await refused('memory_add', { content: 'x', type: 'gossip' }), /type/);
    assert.match(await refused('memory_add', { content: '   ' }), /content/);
    assert.match(await refused('memory_search', { query: 'x', limit: 500 }), /limit/);
    // A scope is capped as over HTTP (256 characters): one longer is refused, one at the cap is a scope like any other.
    assert.match(await refused('memory_add', { content: 'x', scope: 's'.repeat(257) }), /scope/);
    assert.match(await refused('memory_add', { content: 'x', scope: '   ' }), /scope/);
    assert.match(await refused('no_such_tool', {}), /no_such_tool/);
    assert.deepEqual(await (await fetch(`${proxy.url}/v1/memory/stats`)).json(), before);
    const atCap = (await client.callTool({ name: 'memory_search', arguments: { query: 'x', scope: 's'.repeat(256) } })) as TextResult;
    assert.notEqual(atCap.isError, true, textOf(atCap));
  });
});

describe('metaclaw mcp: the skill folder changing under a connected client', () => {
  test('a skill added or removed on disk sends notifications/resources/list_changed, and the new list has it (or not)', async () => {
    const home = tempHome();
    const env = Object.fromEntries(Object.entries(cleanEnv(home)).filter((entry): entry is [string, string] => entry[1] !== undefined));
    const client = new Client({ name: 'metaclaw-test', version: '1.0.0' });
    let changes = 0;
    client.setNotificationHandler(ResourceListChangedNotificationSchema, () => {
      changes++;
    });
    await client.connect(new StdioClientTransport({ command: process.execPath, args: [CLI, 'mcp'], env, stderr: 'pipe' }));
    try {
      // The server says it tells of list changes: a client may cache the list until told.
      assert.equal(client.getServerCapabilities()?.resources?.listChanged, true);
      assert.deepEqual((await client.listResources()).resources, []);
      const folder = join(home, 'skills', 'deploy-with-kamal');
      mkdirSync(folder, { recursive: true });
      writeFileSync(
        join(folder, 'SKILL.md'),
        '---\nname: deploy-with-kamal\ndescription: Use when deploying a web app with Kamal.\ncategory: devops\n---\n\n# Deploy with Kamal\n\nRun `kamal deploy`.\n',
      );
      await until(() => changes > 0, 'list_changed after a skill was added');
      assert.deepEqual(
        (await client.listResources()).resources.map((resource) => resource.uri),
        ['skill://deploy-with-kamal'],
      );
      const seen = changes;
      rmSync(folder, { recursive: true });
      await until(() => changes > seen, 'list_changed after the skill was removed');
      assert.deepEqual((await client.listResources()).resources, []);
      await assert.rejects(client.readResource({ uri: 'skill://deploy-with-kamal' }), (error: unknown) => {
        assert.ok(error instanceof McpError, String(error));
        assert.equal(error.code, ErrorCode.InvalidParams);
        return true;
      });
    } finally {
      await client.close();
    }
  });
});

describe('metaclaw mcp with a team store configured', () => {
  // test/team-mcp.test.ts serves a reachable team store; this one is where the personal store must not stand in for it.
  test('a team store it cannot reach is named in one line on stderr (password masked, nothing on stdout), and the personal store is not served or made instead', async () => {
    const home = tempHome();
    const result = await runCli(['mcp'], { home, env: { METACLAW_DATABASE_URL: 'postgres://team:s3cret@127.0.0.1:1/metaclaw' } });
    assert.equal(result.code, 1, result.stderr);
    assert.equal(result.stdout, '');
    assert.match(result.stderr, /team store/);
    assert.match(result.stderr, /postgres:\/\/team:\*\*\*\*@127\.0\.0\.1:1\/metaclaw/, 'the URL with its password masked');
    assert.doesNotMatch(result.stderr, /s3cret/);
    assert.equal(existsSync(join(home, 'metaclaw.db')), false, 'the personal store is not created behind the team store');
  });
});

describe('metaclaw mcp: several servers starting at once on a new home', () => {
  // Each editor session starts its own server: on a first run (or after an upgrade) they all find the schema to migrate.
  test('every one connects and serves: a migration another process applied meanwhile is not run twice', async () => {
    const home = tempHome();
    const env = Object.fromEntries(Object.entries(cleanEnv(home)).filter((entry): entry is [string, string] => entry[1] !== undefined));
    // The empty database's write lock is held while the servers start, so they all read schema
    // version 0 and then queue for the lock: the race of processes started together, every time.
    const holder = new Database(join(home, 'metaclaw.db'));
    holder.pragma('journal_mode = WAL');
    holder.exec('BEGIN IMMEDIATE');
    const clients = Array.from({ length: 4 }, () => new Client({ name: 'metaclaw-test', version: '1.0.0' }));
    const stderr: string[] = [];
    try {
      const connecting = Promise.allSettled(
        clients.map((client) => {
          const transport = new StdioClientTransport({ command: process.execPath, args: [CLI, 'mcp'], env, stderr: 'pipe' });
          transport.stderr?.on('data', (chunk: Buffer) => stderr.push(String(chunk)));
          return client.connect(transport);
        }),
      );
      // Within the servers' 5 s busy timeout.
      await new Promise((resolve) => setTimeout(resolve, 3_000));
      holder.exec('COMMIT');
      const connected = await connecting;
      assert.deepEqual(
        connected.map((outcome) => outcome.status),
        clients.map(() => 'fulfilled'),
        stderr.join(''),
      );
      const added = await Promise.all(
        clients.map((client, index) => client.callTool({ name: 'memory_add', arguments: { content: `Server ${index} was here.` } })),
      );
      for (const result of added) assert.notEqual((result as TextResult).isError, true, textOf(result));
      const found = JSON.parse(textOf(await clients[0]!.callTool({ name: 'memory_search', arguments: { query: 'server here', limit: 50 } }))) as unknown[];
      assert.equal(found.length, clients.length);
    } finally {
      if (holder.inTransaction) holder.exec('ROLLBACK');
      holder.close();
      await Promise.all(clients.map((client) => client.close()));
    }
  });
});

async function until(check: () => boolean, what: string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
