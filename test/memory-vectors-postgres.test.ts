import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type pg from 'pg';
import type { ContextRequest, ContextSection } from '../src/context/index.js';
import { loadConfig } from '../src/config/index.js';
import { EmbeddingClient } from '../src/embeddings/index.js';
import type { JobContext } from '../src/learning/runner.js';
import { silentLogger } from '../src/logging/index.js';
import { EMBED_JOB } from '../src/memory/service.js';
import type { MemoryDraft } from '../src/memory/types.js';
import { forgetPgScope, migratePostgres, openPool, PgJobQueue, PgMemoryApi, readVectorSupport } from '../src/store/postgres/index.js';
import { PgMemoryContextProvider } from '../src/store/postgres/memory-provider.js';
import { EMBED_BATCH, PgMemoryVectors } from '../src/store/postgres/memory-vectors.js';
import { PgMemoryWriter } from '../src/store/postgres/memory-writer.js';
import { inTransaction } from '../src/store/postgres/transaction.js';
import { pgEmbedHandler } from '../src/store/postgres/vector-jobs.js';
import { EMBEDDING_DIMENSIONS, embeddingsHandler } from './support/embeddings.js';
import { startPglite, type TestPglite } from './support/pglite.js';
import { memorySettings } from '../src/runtime/settings.js';
import { ScriptedUpstream } from './support/upstream.js';
import { tempHome } from './support/proxy.js';

const ALICE = 'user:alice';
const BOB = 'user:bob';
const SETTINGS = { topK: 6, maxTokens: 700, coreMaxTokens: 400, minRelevance: 0.1 };
/** The scripted embeddings give "quuxer" the meaning of "zorblat": no keyword search links the two words. */
const SYNONYMS = new Map([
  ['quuxer', 'zorblat'],
  ['blipper', 'frobnicator'],
  ['wimble', 'courtyard'],
]);
const QUESTION = 'Who maintains the quuxer?';

function fact(scope: string, content: string): MemoryDraft {
  return { scope, type: 'semantic', content, origin: 'extractor', observedAt: Date.now() - 86_400_000 };
}

function request(scope: string, text: string, sessionId: string): ContextRequest {
  return { format: 'openai', body: {}, userRequest: { text, messageIndex: 0, isReset: false, earlier: '' }, turnType: 'main', scope, sessionId };
}

function recalledIds(section: ContextSection | undefined): string[] {
  const details = section?.details as { recalled: Array<{ id: string }> } | undefined;
  return details?.recalled.map((entry) => entry.id) ?? [];
}

function jobContext(): JobContext {
  return {
    job: { id: 1, kind: EMBED_JOB, payload: {}, attempts: 1, maxAttempts: 3, createdAt: Date.now() },
    signal: new AbortController().signal,
    logger: silentLogger(),
    spend: () => undefined,
  };
}

async function count(pool: pg.Pool, sql: string, values: unknown[] = []): Promise<number> {
  return Number((await pool.query<{ n: string }>(sql, values)).rows[0]!.n);
}

/** Runs memory.embed once as a node's runner would: the handler, then its effect in a transaction. */
async function runEmbedJob(vectors: PgMemoryVectors, queue: PgJobQueue, pool: pg.Pool, payload: unknown = {}): Promise<void> {
  const effect = await pgEmbedHandler(vectors, queue).run(payload, jobContext());
  if (effect) await inTransaction(pool, effect);
}

// PGlite with pgvector stands in for a PostgreSQL server that has the extension (Debian's test server has none).
describe('memory vectors in pgvector (team store, PGlite with pgvector)', () => {
  let server: TestPglite;
  let pool: pg.Pool;
  let upstream: ScriptedUpstream;
  const providers: PgMemoryContextProvider[] = [];

  const newVectors = () => new PgMemoryVectors(pool, new EmbeddingClient({ apiBase: `${upstream.url}/v1`, apiKey: '', model: 'embed-1' }), silentLogger());

  before(async () => {
    server = await startPglite();
    pool = openPool(server.url, { max: 2 });
    upstream = await ScriptedUpstream.start();
    upstream.defaultHandler = embeddingsHandler(() => false, SYNONYMS);
  });

  after(async () => {
    for (const provider of providers) await provider.stop();
    await pool?.end();
    await upstream?.close();
    await server?.stop();
  });

  test('migrating a store on a server that has pgvector installs the extension; no vectors are recorded yet', async () => {
    await migratePostgres(pool);
    const support = await readVectorSupport(pool);
    assert.equal(support.state, 'installed');
    assert.ok(support.state === 'installed' && support.model === undefined);
    assert.match(support.notice, /^vector recall ready: pgvector \S+ is installed/);
    // Migrating again (the extension is there) changes nothing.
    assert.deepEqual((await migratePostgres(pool)).applied, []);
  });

  test('a unit added on a node queues memory.embed; the job stores unit vectors, records the model and builds the HNSW index', async () => {
    const vectors = newVectors();
    await vectors.enable();
    const queue = new PgJobQueue(pool, 'test-node', 3);
    const writer = new PgMemoryWriter(pool, (client) => vectors.queueEmbed(queue, client));
    try {
      await writer.add(fact(ALICE, 'Zorblat sends the invoices.'));
      await writer.add(fact(ALICE, 'The greyhound Pepper hides under the desk during thunderstorms.'));
      await writer.add(fact(ALICE, 'Deployments to production need two approvals.'));
      await writer.add(fact(BOB, 'Zorblat runs on the old rack in Leeds.'));
    } finally {
      writer.close();
    }
    assert.equal(await count(pool, "SELECT count(*) AS n FROM jobs WHERE kind = $1 AND status = 'queued'", [EMBED_JOB]), 1, 'one queued job for all four');
    await runEmbedJob(vectors, queue, pool);
    assert.equal(await count(pool, 'SELECT count(*) AS n FROM memory_vectors'), 4);
    const norms = await pool.query<{ norm: number; dims: number }>(
      'SELECT sqrt(sum(x * x)) AS norm, count(*)::int AS dims FROM memory_vectors, unnest(embedding) AS x GROUP BY rowid',
    );
    for (const { norm, dims } of norms.rows) {
      assert.equal(dims, EMBEDDING_DIMENSIONS);
      assert.ok(Math.abs(norm - 1) < 1e-5, `unit length, got ${norm}`);
    }
    const support = await readVectorSupport(pool);
    assert.ok(support.state === 'installed');
    assert.deepEqual(support.model, { model: 'embed-1', dimensions: EMBEDDING_DIMENSIONS });
    assert.match(support.notice, /^vector recall: pgvector \S+, memory vectors of embed-1 \(64 dimensions\)/);
    const index = await pool.query<{ indexdef: string }>("SELECT indexdef FROM pg_indexes WHERE indexname = 'memory_vectors_hnsw'");
    assert.match(index.rows[0]?.indexdef ?? '', /USING hnsw .*vector\(64\).* vector_cosine_ops/);
    // A vector of another length cannot be stored: the index's cast is the dimension check.
    await assert.rejects(
      pool.query(
        "INSERT INTO memory_vectors (rowid, scope, embedding) SELECT rowid, scope, '{1,0}' FROM memory_units LIMIT 1 ON CONFLICT (rowid) DO UPDATE SET embedding = excluded.embedding",
      ),
      /expected 64 dimensions/,
    );
    // Nothing left: a second job embeds nothing.
    assert.equal(await pgEmbedHandler(vectors, queue).run({}, jobContext()), undefined);
    // Vectors without their index (as an import leaves them) get it when a node of the same model starts.
    await pool.query('DROP INDEX memory_vectors_hnsw');
    await newVectors().enable();
    assert.equal(await count(pool, "SELECT count(*) AS n FROM pg_indexes WHERE indexname = 'memory_vectors_hnsw'"), 1);
  });

  // With a scope filter the planner may prefer the scope's btree and an exact sort (it does for a
  // scope this small); what is checked is that the distance expression is the indexed one.
  test('the nearest-neighbour ordering is one the HNSW index answers', async () => {
    const vectors = newVectors();
    await vectors.enable();
    const plan = await inTransaction(pool, async (client) => {
      await client.query('SET LOCAL enable_seqscan = off');
      const probe = `'{${new Array(EMBEDDING_DIMENSIONS).fill(0.125).join(',')}}'::real[]`;
      const result = await client.query(`EXPLAIN SELECT rowid FROM memory_vectors ORDER BY (embedding::vector(64)) <=> (${probe}::vector(64)) LIMIT 5`);
      return result.rows.map((row: { 'QUERY PLAN': string }) => row['QUERY PLAN']).join('\n');
    });
    assert.match(plan, /Index Scan using memory_vectors_hnsw/);
  });

  test("a node's hybrid recall finds a unit by meaning that keywords miss, once the question's vector is known, within its own scope", async () => {
    const zorblat = (await pool.query<{ id: string }>('SELECT id FROM memory_units WHERE scope = $1 AND content LIKE $2', [ALICE, 'Zorblat%'])).rows[0]!.id;
    const vectors = newVectors();
    const provider = new PgMemoryContextProvider({ url: server.url, settings: SETTINGS, timeoutMs: 2_000, vectors, retrievalMode: 'hybrid' });
    providers.push(provider);
    await provider.start();
    try {
      // Before vectors are enabled (as on a store without pgvector) recall is by keyword, and keywords miss it.
      assert.ok(!recalledIds(await provider.provide(request(ALICE, QUESTION, 's1'))).includes(zorblat), 'keywords alone miss it');
      await vectors.enable();
      // The request path never waits for the embeddings endpoint: the first request recalls by keyword and warms the question's vector.
      const requestsBefore = upstream.requests.length;
      assert.ok(!recalledIds(await provider.provide(request(ALICE, QUESTION, 's2'))).includes(zorblat));
      const deadline = Date.now() + 5_000;
      while (!vectors.client.readyQuery(QUESTION, () => undefined)) {
        assert.ok(Date.now() < deadline, 'the question was embedded in the background');
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      assert.equal(upstream.requests.length, requestsBefore + 1);
      assert.ok(recalledIds(await provider.provide(request(ALICE, QUESTION, 's3'))).includes(zorblat), 'found by meaning');
      // Bob's zorblat unit is as near, but in his scope: Alice's recall never shows it, and his own does.
      const bobs = (await pool.query<{ id: string }>('SELECT id FROM memory_units WHERE scope = $1', [BOB])).rows[0]!.id;
      assert.ok(!recalledIds(await provider.provide(request(ALICE, QUESTION, 's4'))).includes(bobs));
      assert.ok(recalledIds(await provider.provide(request(BOB, QUESTION, 's4'))).includes(bobs));
      assert.equal(provider.status().failures, 0);
    } finally {
      await provider.stop();
    }
  });

  test('the search route of a node is hybrid too', async () => {
    const vectors = newVectors();
    await vectors.enable();
    const queue = new PgJobQueue(pool, 'test-node', 3);
    const api = new PgMemoryApi(pool, silentLogger(), undefined, { store: vectors, queue, mode: 'hybrid' });
    try {
      const hits = await api.search({ scope: ALICE, query: QUESTION, limit: 5 });
      assert.ok(hits.some((hit) => hit.unit.content.startsWith('Zorblat')));
      const keyword = await new PgMemoryApi(pool, silentLogger()).search({ scope: ALICE, query: QUESTION, limit: 5 });
      assert.ok(!keyword.some((hit) => hit.unit.content.startsWith('Zorblat')));
    } finally {
      api.close();
    }
  });

  test("forgetting a unit deletes its vector, and forgetting a scope deletes the scope's", async () => {
    const zorblat = (
      await pool.query<{ id: string; rowid: string }>('SELECT id, rowid FROM memory_units WHERE scope = $1 AND content LIKE $2', [ALICE, 'Zorblat%'])
    ).rows[0]!;
    const api = new PgMemoryApi(pool, silentLogger());
    try {
      assert.ok(await api.forget(zorblat.id));
    } finally {
      api.close();
    }
    assert.equal(await count(pool, 'SELECT count(*) AS n FROM memory_vectors WHERE rowid = $1', [zorblat.rowid]), 0);
    assert.equal(await count(pool, 'SELECT count(*) AS n FROM memory_vectors WHERE scope = $1', [ALICE]), 2);
    const forgotten = await inTransaction(pool, (client) => forgetPgScope(pool, client, ALICE));
    assert.equal(forgotten.vectors, 2);
    assert.equal(await count(pool, 'SELECT count(*) AS n FROM memory_vectors WHERE scope = $1', [ALICE]), 0);
    assert.equal(await count(pool, 'SELECT count(*) AS n FROM memory_vectors WHERE scope = $1', [BOB]), 1);
  });

  test('a full batch queues the next job under the other dedupe key, so a big store is embedded a batch per job', async () => {
    const vectors = newVectors();
    await vectors.enable();
    const queue = new PgJobQueue(pool, 'test-node', 3);
    const writer = new PgMemoryWriter(pool);
    try {
      for (let index = 0; index < EMBED_BATCH + 3; index++) await writer.add(fact(BOB, `Diary line ${index}: coffee in the garden.`));
    } finally {
      writer.close();
    }
    await pool.query('DELETE FROM jobs');
    await runEmbedJob(vectors, queue, pool);
    const next = await pool.query<{ dedupe_key: string; payload: string }>("SELECT dedupe_key, payload FROM jobs WHERE kind = $1 AND status = 'queued'", [
      EMBED_JOB,
    ]);
    assert.deepEqual(
      next.rows.map((row) => [row.dedupe_key, JSON.parse(row.payload)]),
      [[`${EMBED_JOB}:next`, { round: 1 }]],
    );
    await runEmbedJob(vectors, queue, pool, { round: 1 });
    assert.equal(await count(pool, "SELECT count(*) AS n FROM memory_units WHERE status = 'active' AND rowid NOT IN (SELECT rowid FROM memory_vectors)"), 0);
  });

  test('an edited unit loses its old vector and is embedded again; a vector of the text before an edit is never written', async () => {
    const CAROL = 'user:carol';
    const vectors = newVectors();
    await vectors.enable();
    const queue = new PgJobQueue(pool, 'test-node', 3);
    const settings = { ...memorySettings(loadConfig({ env: { METACLAW_HOME: tempHome() } })), autoExtract: false };
    const api = new PgMemoryApi(pool, silentLogger(), { queue, settings }, { store: vectors, queue, mode: 'hybrid' });
    const foundBy = async (query: string) => (await api.search({ scope: CAROL, query, limit: 5 })).map((hit) => hit.unit.id);
    const vectorCount = (rowid: string) => count(pool, 'SELECT count(*) AS n FROM memory_vectors WHERE rowid = $1', [rowid]);
    try {
      const unit = await api.add(fact(CAROL, 'The Frobnicator ledger'));
      const { rowid } = (await pool.query<{ rowid: string }>('SELECT rowid FROM memory_units WHERE id = $1', [unit.id])).rows[0]!;
      await runEmbedJob(vectors, queue, pool);
      assert.ok((await foundBy('blipper')).includes(unit.id), 'found by meaning');

      await pool.query('DELETE FROM jobs');
      assert.ok(await api.update(unit.id, { content: 'Lunch in the courtyard' }));
      assert.equal(await vectorCount(rowid), 0, 'the old vector went with the edit');
      assert.equal(await count(pool, "SELECT count(*) AS n FROM jobs WHERE kind = $1 AND status = 'queued'", [EMBED_JOB]), 1, 'and the embed job was queued');
      await runEmbedJob(vectors, queue, pool);
      assert.equal(await vectorCount(rowid), 1);
      assert.ok((await foundBy('wimble')).includes(unit.id), 'found by the meaning of its new text');
      assert.ok(!(await foundBy('blipper')).includes(unit.id), 'not by the meaning of the old one');

      // Edited while its vector was being computed: that vector is of the old text, so it is not written.
      await api.update(unit.id, { content: 'The Frobnicator ledger again' });
      const effect = await pgEmbedHandler(vectors, queue).run({}, jobContext());
      await api.update(unit.id, { content: 'Lunch in the courtyard again' });
      if (effect) await inTransaction(pool, effect);
      assert.equal(await vectorCount(rowid), 0);
    } finally {
      api.close();
    }
  });
});
