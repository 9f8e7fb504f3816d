/**
 * Searches someone waits on (`metaclaw memory search`, MCP's memory_search and skills_search) on a
 * personal install search as the proxy does: with the embeddings the config (or the provider's last
 * probe) gives, waiting for the query's vector; when the endpoint fails, keywords answer and one
 * line on stderr says so. The scripted embeddings give made-up words the meaning of real ones, so
 * only a vector links the query to what it finds.
 */
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import Database from 'better-sqlite3';
import * as sqliteVec from 'sqlite-vec';
import { stringify } from 'yaml';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { bagOfWords, embeddingsHandler } from './support/embeddings.js';
import { sendJson } from './support/http.js';
import { CLI, cleanEnv, databaseBytes, startProxy, tempHome, waitFor, type ProxyHandle } from './support/proxy.js';
import { openAIReply, ScriptedUpstream } from './support/upstream.js';

const SYNONYMS = new Map([
  ['zorkel', 'frobnicator'],
  ['blipper', 'ledger'],
  ['quuxing', 'calibrating'],
]);
const MEMORY_TEXT = 'The Frobnicator ledger is kept in room 4';
const MEMORY_QUERY = 'zorkel blipper';
const SKILL_QUERY = 'quuxing the zorkel';

/** A text's vector as stored: the scripted endpoint's answer, normalised, as float32. */
function storedVector(text: string): Buffer {
  const raw = bagOfWords(text, SYNONYMS);
  const norm = Math.sqrt(raw.reduce((sum, value) => sum + value * value, 0));
  return Buffer.from(new Float32Array(raw.map((value) => value / norm)).buffer);
}

type TextResult = { content: Array<{ type: string; text?: string }>; isError?: boolean };

describe('memory and skill searches from the CLI and MCP use vectors as the proxy does', () => {
  let upstream: ScriptedUpstream;
  let proxy: ProxyHandle;
  let failing = false;
  let unitId = '';

  before(async () => {
    upstream = await ScriptedUpstream.start();
    const embed = embeddingsHandler(() => failing, SYNONYMS);
    upstream.defaultHandler = (request, response) =>
      request.path.endsWith('/embeddings') ? embed(request, response) : openAIReply({ text: 'ok' })(request, response);
    const home = tempHome();
    const folder = join(home, 'skills', 'frobnicator-calibration');
    mkdirSync(folder, { recursive: true });
    writeFileSync(
      join(folder, 'SKILL.md'),
      '---\nname: frobnicator-calibration\ndescription: Calibrating a frobnicator before a shift.\ncategory: operations\n---\n\nCalibrating the frobnicator: zero it first.\n',
    );
    const embedding = { api_base: `${upstream.url}/v1`, model: 'bow-64' };
    proxy = await startProxy({
      home,
      config: {
        llm: { api_base: `${upstream.url}/v1`, api_key: 'k' },
        memory: { auto_extract: false, embedding },
        skills: { retrieval_mode: 'hybrid', embedding },
      },
    });
    const added = await sendJson(`${proxy.url}/v1/memory`, 'POST', { body: { type: 'semantic', content: MEMORY_TEXT } });
    assert.equal(added.status, 201);
    unitId = added.body.id;
    // Embedded by the proxy's job: its own search route finds the unit by meaning once the vector is stored.
    await waitFor(
      async () =>
        (await sendJson(`${proxy.url}/v1/memory/search`, 'POST', { body: { query: MEMORY_QUERY } })).body.results.some(
          (hit: { id: string }) => hit.id === unitId,
        ),
      15_000,
      200,
    );
  });
  after(async () => {
    await proxy?.dispose();
    await upstream?.close();
  });

  test('`metaclaw memory search` finds a memory only a vector links to the query', async () => {
    const searched = await proxy.cli(['memory', 'search', MEMORY_QUERY, '--json']);
    assert.equal(searched.code, 0, searched.stderr);
    assert.ok(
      (JSON.parse(searched.stdout) as Array<{ id: string }>).some((hit) => hit.id === unitId),
      searched.stdout,
    );
    assert.equal(searched.stderr, '');
  });

  test("MCP's memory_search and skills_search find by meaning too", async () => {
    const env = Object.fromEntries(Object.entries(cleanEnv(proxy.home)).filter((entry): entry is [string, string] => entry[1] !== undefined));
    const client = new Client({ name: 'metaclaw-test', version: '1.0.0' });
    await client.connect(new StdioClientTransport({ command: process.execPath, args: [CLI, 'mcp'], env, stderr: 'pipe' }));
    try {
      const text = (result: unknown) => (result as TextResult).content[0]?.text ?? '';
      const memories = JSON.parse(text(await client.callTool({ name: 'memory_search', arguments: { query: MEMORY_QUERY } }))) as Array<{ id: string }>;
      assert.ok(
        memories.some((hit) => hit.id === unitId),
        JSON.stringify(memories),
      );
      const skills = JSON.parse(text(await client.callTool({ name: 'skills_search', arguments: { query: SKILL_QUERY } }))) as Array<{ name: string }>;
      assert.deepEqual(
        skills.map((skill) => skill.name),
        ['frobnicator-calibration'],
      );
    } finally {
      await client.close();
    }
  });

  test('with the embeddings endpoint failing, `memory search` answers by keywords and says so on stderr', async () => {
    failing = true;
    try {
      const searched = await proxy.cli(['memory', 'search', 'frobnicator ledger room', '--json']);
      assert.equal(searched.code, 0, searched.stderr);
      assert.ok(
        (JSON.parse(searched.stdout) as Array<{ id: string }>).some((hit) => hit.id === unitId),
        'keywords still find it',
      );
      assert.match(searched.stderr, /^Searched by keywords only: the embeddings endpoint did not answer .*\.\n$/);
    } finally {
      failing = false;
    }
  });

  test("`metaclaw memory forget` takes the memory's vector out of the database file too", async () => {
    const stored = storedVector(MEMORY_TEXT);
    assert.ok(databaseBytes(proxy.home).includes(stored), 'the vector is in the file before');
    const forgot = await proxy.cli(['memory', 'forget', unitId]);
    assert.equal(forgot.code, 0, forgot.stderr);
    assert.equal(databaseBytes(proxy.home).includes(stored), false, 'and gone after');
  });

  test('so does `metaclaw memory forget` run with a config that names no embeddings (keyword retrieval)', async () => {
    const text = 'The Frobnicator spare parts are in the basement';
    const added = await sendJson(`${proxy.url}/v1/memory`, 'POST', { body: { type: 'semantic', content: text } });
    assert.equal(added.status, 201);
    const stored = storedVector(text);
    await waitFor(() => databaseBytes(proxy.home).includes(stored), 15_000, 200);
    const config = join(tempHome('metaclaw-keyword-config-'), 'config.yaml');
    writeFileSync(config, stringify({ llm: { api_base: `${upstream.url}/v1`, api_key: 'k' }, memory: { retrieval_mode: 'keyword', auto_extract: false } }), {
      mode: 0o600,
    });
    const forgot = await proxy.cli(['memory', 'forget', added.body.id, '--config', config]);
    assert.equal(forgot.code, 0, forgot.stderr);
    assert.equal(databaseBytes(proxy.home).includes(stored), false, 'the vector went with its unit');
  });

  test('and `metaclaw memory forget` run with a config that names another embedding model (whose vectors it leaves to the proxy) still takes the vector out, and only that one', async () => {
    const texts = ['The Frobnicator warranty card is in the glovebox', 'The Frobnicator manual is on the top shelf'];
    const ids: string[] = [];
    for (const text of texts) {
      const added = await sendJson(`${proxy.url}/v1/memory`, 'POST', { body: { type: 'semantic', content: text } });
      assert.equal(added.status, 201);
      ids.push(added.body.id);
    }
    const forgotten = storedVector(texts[0]!);
    await waitFor(() => databaseBytes(proxy.home).includes(forgotten) && vectorsOf(proxy.home, ids) === 2, 15_000, 200);
    const config = join(tempHome('metaclaw-other-model-config-'), 'config.yaml');
    const embedding = { api_base: `${upstream.url}/v1`, model: 'another-model' };
    writeFileSync(config, stringify({ llm: { api_base: `${upstream.url}/v1`, api_key: 'k' }, memory: { auto_extract: false, embedding } }), { mode: 0o600 });
    const forgot = await proxy.cli(['memory', 'forget', ids[0]!, '--config', config]);
    assert.equal(forgot.code, 0, forgot.stderr);
    assert.equal(databaseBytes(proxy.home).includes(forgotten), false, 'the vector went with its unit');
    assert.equal(vectorsOf(proxy.home, ids), 1, "the proxy's other vector stays");
  });
});

/** How many of these units have a vector in the install's sqlite-vec table (read-only). */
function vectorsOf(home: string, ids: readonly string[]): number {
  const db = new Database(join(home, 'metaclaw.db'), { readonly: true });
  try {
    sqliteVec.load(db);
    const found = db
      .prepare(`SELECT count(*) AS n FROM memory_vec v JOIN memory_units u ON u.rowid = v.rowid WHERE u.id IN (${ids.map(() => '?').join(', ')})`)
      .get(...ids) as { n: number };
    return found.n;
  } finally {
    db.close();
  }
}
