/**
 * Team nodes run the learning jobs that keep the team store searchable across languages and tidy:
 * skill and memory search keys (a Chinese request finds an English skill or memory once the job
 * wrote keys) and the daily memory housekeeping, done once for the team however many nodes ask.
 * Real `metaclaw start` nodes on one PostgreSQL; only the LLM is scripted.
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { before, describe, test } from 'node:test';
import OpenAI from 'openai';
import { openDatabase } from '../src/store/index.js';
import { addPgMemory } from '../src/store/postgres/index.js';
import { isExtractorCall, isMemoryKeysCall, isSearchKeysCall, learningAwareUpstream, userText } from './support/evolver.js';
import { sendJson } from './support/http.js';
import { postgresSkip } from './support/postgres.js';
import { startProxy, waitFor, type ProxyHandle } from './support/proxy.js';
import { englishOnlyStarter } from './support/skill-banks.js';
import { teamForTests, teamHelpers } from './support/team.js';

const OWNER_KEY = 'owner-key-for-the-team-jobs-test';
/** "Nobody dares touch this lump of ancestral code": no glossary word of it reaches the English refactoring skill. */
const SKILL_SLANG = '这坨祖传代码谁也不敢动';
/** "What is my boss (the cat, in internet slang) called?": no dictionary word of it is in the memory. */
const MEMORY_SLANG = '我家主子叫啥';
const MEMORY = 'Mochi is the name of the family cat; she eats only salmon kibble.';
/** A memory added by hand in English, and a question in other words than its own ("car"). */
const CAR_MEMORY = 'The user drives a 2015 Subaru Outback.';
const CAR_QUESTION = 'what car do I have';
/** The scripted memory keys: for a memory holding the text, in the language asked. */
const MEMORY_KEYS: Array<[text: string, language: string, keys: string[]]> = [
  ['Mochi', 'zh', ['主子', '猫主子', '猫的名字', '宠物猫']],
  ['Subaru', 'en', ['car', 'vehicle', 'station wagon', 'what I drive']],
];
const DAY = 86_400_000;

const team = teamForTests('team_jobs');
let staleId: string;
const { nodes } = team;
const keys: Record<string, string> = {};

const { teamEnv, cli, rows, addMembers, startNodes } = teamHelpers(() => team, OWNER_KEY, keys);

async function ask(node: ProxyHandle, text: string, session: string): Promise<void> {
  const client = new OpenAI({ baseURL: `${node.url}/v1`, apiKey: keys['alice'], maxRetries: 0 });
  await client.chat.completions.create({ model: 'scripted-model', messages: [{ role: 'user', content: text }] }, { headers: { 'X-Session-Id': session } });
}

/** The skills the node injected into the last request the agent sent (learning calls left out). */
function injectedSkills(): string[] {
  const system = team.upstream
    .modelRequests()
    .filter((request) => !isSearchKeysCall(request) && !isMemoryKeysCall(request) && !isExtractorCall(request))
    .at(-1)!.body.messages[0];
  const text = system?.role === 'system' && typeof system.content === 'string' ? system.content : '';
  return [...text.matchAll(/^### ([a-z0-9-]+)/gm)].map((match) => match[1]!);
}

async function searchAsAlice(node: ProxyHandle, query: string): Promise<string[]> {
  const found = await sendJson(`${node.url}/v1/memory/search`, 'POST', { headers: { authorization: `Bearer ${keys['alice']}` }, body: { query } });
  assert.equal(found.status, 200, JSON.stringify(found.body));
  return (found.body.results as Array<{ id: string }>).map((hit) => hit.id);
}

/** Saves a memory as alice on `node` (`POST /v1/memory`); its id. */
async function addAsAlice(node: ProxyHandle, content: string): Promise<string> {
  const added = await sendJson(`${node.url}/v1/memory`, 'POST', { headers: { authorization: `Bearer ${keys['alice']}` }, body: { type: 'semantic', content } });
  assert.equal(added.status, 201, JSON.stringify(added.body));
  return added.body.id as string;
}

describe('team mode: search keys and housekeeping run on the team store', { skip: postgresSkip() }, () => {
  before(async () => {
    team.upstream.defaultHandler = learningAwareUpstream({
      chat: 'Done.',
      searchKeys: (request) => {
        const names = [...userText(request).matchAll(/^### ([a-z0-9-]+) \(keys in: ([a-z, ]+)\)/gm)];
        return JSON.stringify({
          skills: names.map(([, name, languages]) => ({
            name,
            language: languages!.split(', ')[0],
            keys: name === 'safe-refactoring' ? ['祖传代码', '屎山', '不敢动的老代码', '重构'] : [],
          })),
        });
      },
      memoryKeys: (request) => {
        const units = [...userText(request).matchAll(/^### (mem_[a-z0-9]+) \(keys in: ([a-z, ]+)\)\n(.*)$/gm)];
        return JSON.stringify({
          units: units.flatMap(([, id, languages, content]) =>
            languages!
              .split(', ')
              .map((language) => ({ id, language, keys: MEMORY_KEYS.find(([text, asked]) => content!.includes(text) && asked === language)?.[2] ?? [] })),
          ),
        });
      },
    });
    englishOnlyStarter(join(team.seed, 'skills'));
    openDatabase(join(team.seed, 'metaclaw.db')).close();
    await cli(['store', 'migrate']);
    await cli(['store', 'import-sqlite', team.seed]);
    await addMembers(['alice']);
    // An episode nobody recalled for 60 days: housekeeping lowers its importance by a tenth, once a day.
    const stale = await addPgMemory(team.pool, {
      scope: 'team',
      type: 'episodic',
      content: 'The staging database was restored from a snapshot after the migration failed.',
      importance: 0.5,
      confidence: 1,
      origin: 'manual',
      observedAt: Date.now() - 60 * DAY,
    });
    staleId = stale!.id;
    nodes.push(
      ...(await startNodes(2, {
        llm: { api_base: `${team.upstream.url}/v1`, api_key: 'upstream-key' },
        memory: { auto_extract: false },
        skills: { auto_evolve: false },
        learning: { lease_seconds: 5 },
      })),
    );
  });

  test("two nodes starting the same day run the team's memory housekeeping once: a stale episode decays by one tenth, not two", async () => {
    const jobs = await waitFor(
      async () => {
        const all = await rows<{ status: string }>("SELECT status FROM jobs WHERE kind = 'memory.housekeeping'");
        return all.length > 0 && all.every((job) => job.status === 'done') ? all : undefined;
      },
      20_000,
      200,
    );
    assert.ok(jobs.length >= 1);
    const effects = await rows<{ idempotency_key: string }>("SELECT idempotency_key FROM job_effects WHERE idempotency_key LIKE 'memory.housekeeping:%'");
    assert.equal(effects.length, 1, 'one effect for the day');
    const [unit] = await rows<{ importance: number }>('SELECT importance FROM memory_units WHERE id = $1', [staleId]);
    assert.ok(Math.abs(Number(unit!.importance) - 0.45) < 1e-9, `decayed once: ${unit!.importance}`);
  });

  test('a Chinese request on one node finds an English skill of the team once the skill search keys job wrote keys, on every node, and `skills show` lists them', async () => {
    await ask(nodes[0]!, SKILL_SLANG, 'zh-skill-1');
    assert.ok(!injectedSkills().includes('safe-refactoring'), 'the glossary alone does not find it');
    await ask(nodes[0]!, '帮我写一个 SQL 查询统计每个月的订单数', 'zh-skill-2');
    const stored = await waitFor(
      async () => (await rows<{ keys: string }>("SELECT keys FROM skill_search_keys WHERE name = 'safe-refactoring' AND language = 'zh'"))[0],
      30_000,
      200,
    );
    assert.deepEqual(JSON.parse(stored.keys), ['祖传代码', '屎山', '不敢动的老代码', '重构']);
    // The owner sees them where the nodes read them: `skills show` on the team store lists the keys.
    assert.match(await cli(['skills', 'show', 'safe-refactoring']), /^ {2}search keys \(zh\): 祖传代码, 屎山, 不敢动的老代码, 重构$/m);
    const shown = JSON.parse(await cli(['skills', 'show', 'safe-refactoring', '--json'])) as { search_keys: Record<string, string[]> };
    assert.deepEqual(shown.search_keys, { zh: ['祖传代码', '屎山', '不敢动的老代码', '重构'] });
    for (const [index, node] of nodes.entries())
      await waitFor(
        async () => {
          await ask(node, SKILL_SLANG, `zh-skill-found-${index}`);
          return injectedSkills().includes('safe-refactoring');
        },
        10_000,
        200,
      );
  });

  test('a Chinese question on another node recalls an English memory once the memory search keys job wrote keys', async () => {
    const id = await addAsAlice(nodes[0]!, MEMORY);
    assert.ok((await searchAsAlice(nodes[1]!, 'what is the family cat called?')).includes(id));
    const found = await waitFor(async () => (await searchAsAlice(nodes[1]!, MEMORY_SLANG)).includes(id), 30_000, 250);
    assert.ok(found);
    const [row] = await rows<{ created_at: string }>('SELECT created_at FROM memory_search_keys LIMIT 1');
    assert.ok(row, 'the keys are stored in the team store');
  });

  test("an English question in other words than an English memory's own recalls it once the memory search keys job wrote keys in English, the memory's language", async () => {
    const id = await addAsAlice(nodes[0]!, CAR_MEMORY);
    assert.ok(!(await searchAsAlice(nodes[1]!, CAR_QUESTION)).includes(id), 'the memory text alone does not find it');
    // Two English requests make English a language the team writes.
    await ask(nodes[0]!, 'please format this date string as ISO', 'en-memory-1');
    await ask(nodes[0]!, 'summarise this article in three lines', 'en-memory-2');
    assert.ok(await waitFor(async () => (await searchAsAlice(nodes[1]!, CAR_QUESTION)).includes(id), 30_000, 250));
    assert.ok(!(await searchAsAlice(nodes[1]!, 'which bank holds my mortgage')).includes(id), 'an unrelated question does not recall it');
  });

  test('a dead team job is listed by `metaclaw jobs` and over a node with the owner key (a member key is refused), and `jobs retry` sends it back to a node that runs it', async () => {
    const [dead] = await rows<{ id: string }>(
      `INSERT INTO jobs (kind, payload, dedupe_key, status, attempts, max_attempts, run_after, last_error, created_at, updated_at, finished_at)
       VALUES ('memory.search_keys', '{}', 'memory.search_keys:by-hand', 'dead', 5, 5, 0, 'upstream answered 503 five times', $1, $1, $1) RETURNING id`,
      [Date.now()],
    );
    const id = Number(dead!.id);
    const listed = JSON.parse(await cli(['jobs', '--json'])) as { data: Array<{ id: number; kind: string; status: string; error: string }> };
    assert.deepEqual(
      listed.data.map((job) => [job.id, job.kind, job.status, job.error]),
      [[id, 'memory.search_keys', 'dead', 'upstream answered 503 five times']],
    );
    const overHttp = await sendJson(`${nodes[0]!.url}/v1/learning/jobs`, 'GET', { headers: { authorization: `Bearer ${OWNER_KEY}` } });
    const asMember = await sendJson(`${nodes[0]!.url}/v1/learning/jobs/${id}/retry`, 'POST', { headers: { authorization: `Bearer ${keys['alice']}` } });
    assert.equal(asMember.status, 403, JSON.stringify(asMember.body));
    assert.equal(asMember.body.error.code, 'member_not_allowed');
    assert.equal(overHttp.status, 200, JSON.stringify(overHttp.body));
    assert.deepEqual(
      overHttp.body.data.map((job: { id: number }) => job.id),
      [id],
    );
    assert.match(await cli(['jobs', 'retry', String(id)]), new RegExp(`job ${id}: queued again`));
    await waitFor(async () => (await rows<{ status: string }>('SELECT status FROM jobs WHERE id = $1', [id]))[0]?.status === 'done', 20_000, 200);
    assert.match(await cli(['jobs']), /^No dead learning jobs\.$/m);
  });

  test("memory a node with a clock six hours fast learns is stamped with the database's clock", async () => {
    // The only node left is the skewed one, so it is the one that runs the job.
    for (const node of nodes.splice(0)) await node.dispose();
    // Preloaded into the node: a machine whose clock disagrees with the database's.
    const preload = join(team.seed, 'skewed-clock.mjs');
    writeFileSync(preload, 'const skew = Number(process.env.METACLAW_TEST_CLOCK_SKEW_MS);\nconst realNow = Date.now;\nDate.now = () => realNow() + skew;\n');
    const skewed = await startProxy({
      env: {
        ...teamEnv(),
        NODE_OPTIONS: `--import=${pathToFileURL(preload).href}`,
        METACLAW_TEST_CLOCK_SKEW_MS: String(6 * 3_600_000),
      },
      config: { llm: { api_base: `${team.upstream.url}/v1`, api_key: 'upstream-key' }, memory: { auto_extract: false }, skills: { auto_evolve: false } },
    });
    nodes.push(skewed);
    await ask(skewed, 'Please note the release train leaves every second Tuesday.', 'skewed-clock');
    const unit = await waitFor(
      async () =>
        (
          await rows<{ created_at: string; updated_at: string; db_now: string }>(
            `SELECT created_at, updated_at, (extract(epoch FROM clock_timestamp()) * 1000)::bigint AS db_now FROM memory_units
             WHERE content LIKE '%release train leaves every second Tuesday%' LIMIT 1`,
          )
        )[0],
      20_000,
      200,
    );
    for (const stamp of [unit.created_at, unit.updated_at])
      assert.ok(Math.abs(Number(unit.db_now) - Number(stamp)) < 60_000, `stamped ${Number(stamp) - Number(unit.db_now)} ms from the database's clock`);
  });
});
