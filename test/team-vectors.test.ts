/**
 * Memory vectors on a whole node: `metaclaw start` on a team store that has pgvector (PGlite with
 * its pgvector extension, behind the session relay of support/pglite-sessions.ts: Debian's
 * PostgreSQL has no pgvector), members' writes embedded by the node's queue, and hybrid recall
 * reaching the upstream through the real OpenAI client. The scripted embeddings give "quuxer" the
 * meaning of "zorblat", so only a vector can link the question to the memory.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import { embeddingsHandler } from './support/embeddings.js';
import { sendJson } from './support/http.js';
import { startPgliteTeam, type TestPglite } from './support/pglite.js';
import { startProxy, waitFor, type ProxyHandle } from './support/proxy.js';
import { disposeTeam, teamHelpers } from './support/team.js';
import { ScriptedUpstream } from './support/upstream.js';

const OWNER_KEY = 'owner-key-for-the-team-vectors-test';
const QUESTION = 'Who maintains the quuxer, and where does Pepper hide?';
const state = { url: '', seed: '', pool: undefined as unknown as pg.Pool };
const keys: Record<string, string> = {};
const { teamEnv, cli, client } = teamHelpers(() => state, OWNER_KEY, keys);

let server: TestPglite;
let upstream: ScriptedUpstream;
/** memory.embedding set: recall is hybrid. */
let hybrid: ProxyHandle;
/** Same store, memory.retrieval_mode keyword. */
let keyword: ProxyHandle;
let sessions = 0;
/** Set: the next embeddings request waits for it, and `embedArrived` is called when that request comes. */
let holdNextEmbed: Promise<void> | undefined;
let embedArrived: (() => void) | undefined;

/**
 * Until no learning job is running or due. PGlite runs one statement at a time, so a request asked
 * while the queue works may wait past its recall deadline (100 ms) and go without memory, by design.
 */
async function quiet(): Promise<void> {
  await waitFor(
    async () =>
      (
        await state.pool.query<{ n: string }>(
          "SELECT count(*) AS n FROM jobs WHERE status = 'leased' OR (status = 'queued' AND run_after <= (extract(epoch FROM clock_timestamp()) * 1000)::bigint + 3000)",
        )
      ).rows[0]!.n === '0',
    30_000,
    200,
  );
}

/** What the upstream was sent for `member`'s question asked on `node` once the queue is quiet (in a session of its own, so no section is reused). */
async function sentFor(node: ProxyHandle, member: string, question = QUESTION): Promise<string> {
  await quiet();
  const session = `vectors-${++sessions}`;
  await client(node, member).chat.completions.create({ model: 'm', messages: [{ role: 'user', content: question }] }, { headers: { 'x-session-id': session } });
  const sent = upstream.modelRequests().findLast((request) => request.path.endsWith('/chat/completions') && request.raw.includes(question));
  assert.ok(sent, 'the upstream got the question');
  return sent.raw;
}

/** What the upstream was sent for the first asking (of several, while recall misses it) whose recall holds `recalled`. */
async function recalling(node: ProxyHandle, member: string, recalled: RegExp, question = QUESTION): Promise<string> {
  let last = '';
  return waitFor(async () => {
    last = await sentFor(node, member, question);
    return recalled.test(last) && last;
  }, 20_000).catch(async (error: unknown) => {
    throw new Error(`${member} on ${node.url}: never recalled ${recalled}; last sent ${last}; memory status ${JSON.stringify((await status(node)).memory)}`, {
      cause: error,
    });
  });
}

async function status(node: ProxyHandle): Promise<{ store: { search: string; vectors: string }; memory: { failures: number } }> {
  const response = await sendJson(`${node.url}/status`, 'GET', { headers: { authorization: `Bearer ${OWNER_KEY}` } });
  assert.equal(response.status, 200);
  return response.body;
}

async function remember(member: string, content: string): Promise<void> {
  const added = await sendJson(`${hybrid.url}/v1/memory`, 'POST', {
    headers: { authorization: `Bearer ${keys[member]}` },
    body: { type: 'semantic', content },
  });
  assert.equal(added.status, 201, JSON.stringify(added.body));
}

describe('team mode with pgvector: a whole node recalls memories by meaning', () => {
  before(async () => {
    server = await startPgliteTeam(state, 'metaclaw-team-vectors-');
    upstream = await ScriptedUpstream.start();
    const chat = upstream.defaultHandler;
    const embed = embeddingsHandler(() => false, new Map([['quuxer', 'zorblat']]));
    upstream.defaultHandler = async (request, response) => {
      if (!request.path.endsWith('/embeddings')) return chat(request, response);
      const hold = holdNextEmbed;
      holdNextEmbed = undefined;
      if (hold) {
        embedArrived?.();
        await hold;
      }
      return embed(request, response);
    };
    await cli(['store', 'migrate']);
    for (const name of ['alice', 'bob']) keys[name] = (JSON.parse(await cli(['team', 'add-member', name, '--json'])) as { key: string }).key;
    const llm = { api_base: `${upstream.url}/v1`, api_key: 'upstream-key' };
    const embedding = { api_base: `${upstream.url}/v1`, model: 'embed-1' };
    [hybrid, keyword] = await Promise.all([
      startProxy({ env: teamEnv(), config: { llm, memory: { embedding } } }),
      startProxy({ env: teamEnv(), config: { llm, memory: { embedding, retrieval_mode: 'keyword' } } }),
    ]);
  });

  after(async () => {
    await disposeTeam({ nodes: [hybrid, keyword].filter(Boolean), pool: state.pool, upstream, postgres: undefined, seed: state.seed });
    await server?.stop();
  });

  test("members' memories written through a node are embedded by the team queue, those written while it embeds too, and /status and doctor say vectors are on (the doctor passes the store)", async () => {
    // The embed job's call is held once it has read what to embed: the next two memories are written
    // while it runs (their queue requests meet the running job), and must be embedded all the same.
    let release!: () => void;
    holdNextEmbed = new Promise((resolve) => (release = resolve));
    let arrived = false;
    embedArrived = () => (arrived = true);
    await remember('alice', 'Zorblat sends the invoices.');
    await waitFor(() => arrived, 60_000).catch(() => {
      throw new Error('the node never asked for the vector of the first memory');
    });
    await remember('alice', 'The greyhound Pepper hides under the desk during thunderstorms.');
    await remember('bob', 'Zorblat runs on the old rack in Leeds.');
    release();
    await waitFor(async () => (await state.pool.query<{ n: string }>('SELECT count(*) AS n FROM memory_vectors')).rows[0]!.n === '3', 60_000);
    const report = await status(hybrid);
    assert.equal(report.store.search, 'hybrid');
    assert.match(report.store.vectors, /^vectors in use: pgvector \d+\.\d+\.\d+, embed-1 \(64 dimensions\), hybrid recall$/);
    const other = await status(keyword);
    assert.equal(other.store.search, 'keyword');
    assert.match(other.store.vectors, /^keyword-only recall on this node: pgvector \S+ is installed, but .*memory\.retrieval_mode is keyword/);
    const doctor = await hybrid.cli(['doctor', '--json', '--no-canary'], { env: teamEnv() });
    const checks = (JSON.parse(doctor.stdout) as { checks: Array<{ name: string; verdict: string; detail: string }> }).checks;
    const check = (name: string) => checks.find((candidate) => candidate.name === name);
    assert.equal(check('team store')?.verdict, 'pass', doctor.stdout);
    assert.match(check('team store')!.detail, /vector recall: pgvector \d+\.\d+\.\d+, memory vectors of embed-1 \(64 dimensions\)/);
    assert.match(check('retrieval')?.detail ?? '', /memory hybrid \(embed-1\)/, doctor.stdout);
  });

  test("a member's question recalls, through the node, her memory that only its meaning matches beside the one its words match, and never another member's", async () => {
    // The keyword node finds what the words match, and not the paraphrase. (A cold node's first
    // recalls may run past the request's 100 ms wait and go without memory, by design: asked again.)
    const byWords = await recalling(keyword, 'alice', /Pepper hides under the desk/);
    assert.doesNotMatch(byWords, /Zorblat/, 'no keyword links the question to it');
    // The hybrid node recalls by meaning once the question's vector is known (the first asking embeds it off the request path).
    const byMeaning = await recalling(hybrid, 'alice', /Zorblat sends the invoices/);
    assert.match(byMeaning, /Pepper hides under the desk/, 'keyword recall is fused in, not replaced');
    assert.doesNotMatch(byMeaning, /Leeds/, "Bob's unit is as near, but in his scope");
    // Asked without the Pepper clause, which only dilutes his question's vector (bag-of-words embeddings).
    const bobs = await recalling(hybrid, 'bob', /Zorblat runs on the old rack in Leeds/, 'Who maintains the quuxer?');
    assert.doesNotMatch(bobs, /invoices|Pepper/);
    assert.equal((await status(hybrid)).memory.failures, 0, 'no recall failed on the node');
  });
});
