/**
 * `metaclaw team remove-member NAME --forget` on the team store: the member goes and their scope is
 * forgotten in one PostgreSQL transaction — units, keyword index, vectors, search keys, watermarks,
 * and their texts scrubbed from the turns a node recorded — while another member's memories rank
 * exactly as before.
 */
import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import OpenAI from 'openai';
import { contentHash } from '../src/memory/search-keys.js';
import { PgConversationReads } from '../src/store/postgres/conversation-reads.js';
import { PgJobQueue } from '../src/store/postgres/job-queue.js';
import { PgMemorySearch } from '../src/store/postgres/memory-search.js';
import { runCli, startProxy, waitFor, type ProxyHandle } from './support/proxy.js';
import { postgresSkip } from './support/postgres.js';
import { teamForTests } from './support/team.js';

const OWNER_KEY = 'owner-key-for-the-team-forget-test';
/** A word only Alice's memory and her own messages hold. */
const MARKER = 'quokkamarmalade';
/** The marker as the keyword index stems it: what its postings hold. */
const MARKER_STEM = 'quokkamarmalad';
const ALICE_MEMORY = `Alice hides the spare office key under the ${MARKER} jar on the shelf.`;
const BOB_MEMORY = 'Bob hides the spare office key inside the blue mailbox.';

const team = teamForTests('team_forget');
let node: ProxyHandle;
const keys: Record<string, string> = {};

async function cli(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return runCli(args, { home: team.seed, env: { METACLAW_DATABASE_URL: team.url, METACLAW_PROXY_API_KEY: OWNER_KEY } });
}

/** Every table of the store, and how many of its rows hold `word` anywhere (the row as text). */
async function tablesHolding(word: string): Promise<Record<string, number>> {
  const tables = await team.pool.query<{ name: string }>(
    "SELECT table_name AS name FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' ORDER BY 1",
  );
  const found: Record<string, number> = {};
  for (const { name } of tables.rows) {
    const rows = await team.pool.query<{ n: string }>(`SELECT count(*) AS n FROM ${name} t WHERE t::text LIKE $1`, [`%${word}%`]);
    if (Number(rows.rows[0]!.n) > 0) found[name] = Number(rows.rows[0]!.n);
  }
  return found;
}

async function bobSearch(): Promise<unknown> {
  const search = await new PgMemorySearch(team.pool).search('user:bob', ['spare', 'offic', 'kei', 'mailbox'], 10);
  return { hits: search.hits, idf: [...search.idf], size: search.size };
}

describe('team remove-member --forget on the team store', { skip: postgresSkip() }, () => {
  before(async () => {
    for (const [content, scope] of [
      [ALICE_MEMORY, 'user:alice'],
      [BOB_MEMORY, 'user:bob'],
    ] as const) {
      const added = await runCli(['memory', 'add', content, '--scope', scope, '--type', 'semantic'], {
        home: team.seed,
        env: { METACLAW_PROXY_API_KEY: OWNER_KEY },
      });
      assert.equal(added.code, 0, added.stderr);
    }
    assert.equal((await cli(['store', 'migrate'])).code, 0);
    assert.equal((await cli(['store', 'import-sqlite', team.seed])).code, 0);
    for (const name of ['alice', 'bob']) keys[name] = (JSON.parse((await cli(['team', 'add-member', name, '--json'])).stdout) as { key: string }).key;
    node = await startProxy({
      env: { METACLAW_DATABASE_URL: team.url, METACLAW_PROXY_API_KEY: OWNER_KEY },
      // The scripted upstream answers only as the agent's model: no memory search keys job (the test writes the keys it forgets itself).
      config: { llm: { api_base: `${team.upstream.url}/v1`, api_key: 'upstream-key' }, memory: { search_keys: false } },
    });
    team.nodes.push(node);
  });

  test("removes the member and every trace of their scope in one go — units, index, vectors, search keys, watermarks, their turns' texts — and another member's recall is unchanged", async () => {
    // Long enough that bodies are stored as shared parts and message-list chains, not inline.
    const system = {
      role: 'system' as const,
      content: `You are the office assistant. ${'Answer briefly and politely, and cite the office handbook. '.repeat(12)}`,
    };
    const padding = 'The office opens at nine and the kitchen is cleaned on Fridays. '.repeat(9);
    type Message = OpenAI.Chat.Completions.ChatCompletionMessageParam;
    const ask = (member: string, messages: Message[]) =>
      new OpenAI({ baseURL: `${node.url}/v1`, apiKey: keys[member], maxRetries: 0 }).chat.completions.create({ model: 'm', messages: [system, ...messages] });
    // Alice's turns quote her memory (and recall injects it); the second resends the first. Bob's turns are his own.
    const first: Message = { role: 'user', content: `Please remember this: ${ALICE_MEMORY} ${padding}` };
    await ask('alice', [first]);
    await ask('alice', [first, { role: 'assistant', content: 'Noted.' }, { role: 'user', content: `Where is the spare office key? I think: ${ALICE_MEMORY}` }]);
    const bobFirst: Message = { role: 'user', content: `Where is the spare office key? ${padding}` };
    await ask('bob', [bobFirst]);
    await ask('bob', [bobFirst, { role: 'assistant', content: 'In the mailbox.' }, { role: 'user', content: 'Thanks, and the kitchen?' }]);
    await waitFor(async () => Number((await team.pool.query<{ n: string }>('SELECT count(*) AS n FROM turns')).rows[0]!.n) === 4, 10_000);
    // The node learns from the turns (raw turns become memories): what it learns is part of what is forgotten.
    await waitFor(
      async () =>
        Number(
          (await team.pool.query<{ n: string }>("SELECT count(*) AS n FROM jobs WHERE starts_with(kind, 'memory.') AND status IN ('queued', 'leased')"))
            .rows[0]!.n,
        ) === 0,
      15_000,
    );
    const reads = new PgConversationReads(team.pool);
    const turnIds = (await team.pool.query<{ id: string }>('SELECT id FROM turns ORDER BY started_at')).rows.map((row) => row.id);
    const bodies = async () => Promise.all(turnIds.map(async (id) => (await reads.getTurn(id))!));
    const bobBodies = (await bodies()).slice(2).map((turn) => [turn.received, turn.forwarded]);

    const aliceUnits = (
      await team.pool.query<{ rowid: string; content: string }>("SELECT rowid, content FROM memory_units WHERE scope = 'user:alice' ORDER BY rowid")
    ).rows;
    assert.ok(aliceUnits.length > 1, 'her memory and the raw turns the node learned');
    const alice = aliceUnits[0]!;
    await team.pool.query("INSERT INTO memory_vectors (rowid, scope, embedding) VALUES ($1, 'user:alice', '{0.1,0.2}')", [alice.rowid]);
    await team.pool.query("INSERT INTO memory_search_keys (content_hash, language, keys, prompt_version, created_at) VALUES ($1, 'zh', $2, 1, 0)", [
      contentHash(alice.content),
      JSON.stringify([`钥匙 ${MARKER}`]),
    ]);
    await team.pool.query("INSERT INTO state (key, value) VALUES ($1, '7'), ('memory.extracted:user:bob\uFFFEs1', '3')", [
      'memory.extracted:user:alice\uFFFEs1',
    ]);

    const held = await tablesHolding(MARKER_STEM);
    for (const table of ['memory_units', 'memory_postings', 'memory_search_keys', 'turns'])
      assert.ok((held[table] ?? 0) > 0, `before: ${table} holds the marker (${JSON.stringify(held)})`);
    // A body's text sits in its turn_payloads row or, cut out as a shared segment, in payload_segments (seen both ways in runs): either holds the marker.
    assert.ok((held.turn_payloads ?? 0) + (held.payload_segments ?? 0) > 0, `before: the bodies hold the marker (${JSON.stringify(held)})`);
    const bobBefore = await bobSearch();
    assert.ok((bobBefore as { hits: unknown[] }).hits.length >= 1, "Bob's memory is found before");
    const bobUnits = await team.pool.query("SELECT * FROM memory_units WHERE scope <> 'user:alice' ORDER BY rowid");

    // A memory job of hers not run yet would write into her scope again once it runs.
    await new PgJobQueue(team.pool, 'test', 3).enqueue('memory.extract', { sessionId: 'alice~later', scope: 'user:alice', final: true }, { delayMs: 600_000 });
    const removed = await cli(['team', 'remove-member', 'alice', '--forget']);
    assert.equal(removed.code, 0, removed.stderr);
    assert.match(removed.stdout, /Removed alice; their key no longer works\./);
    assert.match(removed.stdout, new RegExp(`Forgot ${aliceUnits.length} memories of scope user:alice\\.`));
    assert.match(
      removed.stdout,
      /1 vector, 1 search-key row, 1 extraction watermark, 1 unfinished memory job; their texts were scrubbed from 2 turn summaries, the stored bodies of 2 turns and 0 skill evolution log lines and proposals\./,
    );

    assert.deepEqual(await tablesHolding(MARKER_STEM), {}, 'no table holds the marker any more');
    const scopeRows = await team.pool.query(
      "SELECT (SELECT count(*) FROM memory_units WHERE scope = 'user:alice') + (SELECT count(*) FROM memory_search_docs WHERE scope = 'user:alice') + (SELECT count(*) FROM memory_scope_sizes WHERE scope = 'user:alice') + (SELECT count(*) FROM memory_vectors WHERE scope = 'user:alice') AS n",
    );
    assert.equal(Number(scopeRows.rows[0].n), 0);
    assert.equal((await team.pool.query("SELECT 1 FROM team_members WHERE name = 'alice'")).rowCount, 0);
    const pendingJobs = await team.pool.query(
      "SELECT 1 FROM jobs WHERE starts_with(kind, 'memory.') AND status IN ('queued', 'leased') AND payload::jsonb ->> 'scope' = 'user:alice'",
    );
    assert.equal(pendingJobs.rowCount, 0, 'no memory job is left to write into the forgotten scope again');
    assert.deepEqual(
      (await team.pool.query("SELECT key FROM state WHERE key LIKE 'memory.extracted:%'")).rows.map((row: { key: string }) => row.key),
      ['memory.extracted:user:bob\uFFFEs1'],
    );
    const queries = (
      await team.pool.query<{ query: string }>(
        "SELECT t.query FROM turns t JOIN sessions s ON s.id = t.session_id WHERE s.scope = 'user:alice' ORDER BY t.started_at",
      )
    ).rows.map((row) => row.query);
    assert.equal(queries.length, 2);
    assert.ok(queries.every((text) => text.includes('[forgotten]')));

    // Every stored body still decodes: Alice's with the memory replaced and the rest kept, Bob's exactly as before.
    const after = await bodies();
    const aliceReceived = JSON.stringify(after[1]!.received);
    // Her raw turns were memories too: their words are gone from her bodies, which still decode.
    assert.match(aliceReceived, /\[forgotten\]/);
    assert.doesNotMatch(aliceReceived, new RegExp(MARKER_STEM));
    assert.deepEqual(
      after.slice(2).map((turn) => [turn.received, turn.forwarded]),
      bobBodies,
    );
    const orphans = await team.pool.query(
      'SELECT (SELECT count(*) FROM payload_segments s WHERE NOT EXISTS (SELECT 1 FROM payload_segment_refs r WHERE r.hash = s.hash)) + (SELECT count(*) FROM payload_segment_refs WHERE refs <= 0) AS n',
    );
    assert.equal(Number(orphans.rows[0].n), 0, 'every part is counted, and none is counted at zero');

    assert.deepEqual(await bobSearch(), bobBefore, "Bob's keyword search ranks and weighs as before");
    assert.deepEqual((await team.pool.query("SELECT * FROM memory_units WHERE scope <> 'user:alice' ORDER BY rowid")).rows, bobUnits.rows);

    await waitFor(
      () =>
        new OpenAI({ baseURL: `${node.url}/v1`, apiKey: keys['alice'], maxRetries: 0 }).chat.completions
          .create({ model: 'm', messages: [{ role: 'user', content: 'hi' }] })
          .then(
            () => false,
            (error: unknown) => (error as { status?: number }).status === 401,
          ),
      3_000,
    );
  });
});
