/**
 * The daily memory housekeeping a node runs on the team store does what a personal install's does:
 * near-duplicates merged (the loser superseded and linked, no longer found), raw turns and
 * superseded units past retention deleted (pinned ones kept), and a scope over its cap brought
 * under it, the least useful episodes first; the raw turn after a deleted one follows the turn
 * before it, as on SQLite. And a node re-indexes the entries older nodes wrote
 * with other bundled words, never those of a newer version (a rolling upgrade converges). Real
 * `metaclaw start` nodes on one PostgreSQL.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { before, describe, test } from 'node:test';
import { loadConfig } from '../src/config/index.js';
import { silentLogger } from '../src/logging/index.js';
import { memorySettings } from '../src/runtime/settings.js';
import { openDatabase } from '../src/store/index.js';
import { addPgMemory, PgJobQueue, PgMemoryApi } from '../src/store/postgres/index.js';
import type { MemoryDraft } from '../src/memory/types.js';
import { sendJson } from './support/http.js';
import { postgresSkip } from './support/postgres.js';
import { startProxy, waitFor } from './support/proxy.js';
import { teamForTests, teamHelpers } from './support/team.js';

const OWNER_KEY = 'owner-key-for-the-team-housekeeping-test';
const DAY = 86_400_000;
const CAP = 100;

const team = teamForTests('team_housekeeping');
const { nodes } = team;
const keys: Record<string, string> = {};
const ids: Record<string, string> = {};
let ownWords: string;

const { teamEnv, cli, rows, addMembers } = teamHelpers(() => team, OWNER_KEY, keys);

async function add(name: string, draft: Partial<MemoryDraft> & { content: string }, options: { rawKey?: string } = {}): Promise<string> {
  const unit = await addPgMemory(team.pool, { scope: 'user:alice', type: 'semantic', importance: 0.6, confidence: 1, origin: 'manual', ...draft }, options);
  ids[name] = unit!.id;
  return unit!.id;
}

/** Waits until the node has run every job of `kind` (at least one). */
async function jobsDone(kind: string): Promise<void> {
  await waitFor(
    async () => {
      const jobs = await rows<{ status: string }>('SELECT status FROM jobs WHERE kind = $1', [kind]);
      return jobs.length > 0 && jobs.every((job) => job.status === 'done');
    },
    20_000,
    200,
  );
}

async function unit(id: string): Promise<{ status: number; body: Record<string, unknown> }> {
  return sendJson(`${nodes[0]!.url}/v1/memory/${id}`, 'GET', { headers: { authorization: `Bearer ${keys['alice']}` } });
}

describe('team mode: memory housekeeping on the team store merges, expires and caps as a personal install does', { skip: postgresSkip() }, () => {
  before(async () => {
    openDatabase(join(team.seed, 'metaclaw.db')).close();
    await cli(['store', 'migrate']);
    await cli(['store', 'import-sqlite', team.seed]);
    await addMembers(['alice']);
    const old = Date.now() - 400 * DAY;
    // Near-duplicates: the same words, told twice; the newer one is kept (same importance).
    await add('olderCopy', { content: 'The staging database runs PostgreSQL 14 on port 5433.', observedAt: Date.now() - 2 * DAY });
    await add('newerCopy', { content: 'the staging database runs postgresql 14, on port 5433' });
    await add('different', { content: 'The production database runs PostgreSQL 16 behind PgBouncer.' });
    // Past retention (365 days): an old raw turn and a unit superseded long ago go; a pinned old raw turn stays.
    await add('oldTurn', { type: 'episodic', origin: 'raw_turn', content: 'user: what was the retro about?', observedAt: old }, { rawKey: 'old-1' });
    await add('pinnedTurn', { type: 'episodic', origin: 'raw_turn', content: 'user: keep this one', observedAt: old, pinned: true }, { rawKey: 'old-2' });
    await add('replaced', { content: 'The office wifi password rotates monthly.' });
    await add('replacement', { content: 'The office wifi password rotates every quarter.' });
    await add('chineseDoc', { content: '帮我优化一下这个文档的结构。' });
    await team.pool.query("UPDATE memory_units SET status = 'superseded', superseded_by = $2, updated_at = $3 WHERE id = $1", [
      ids['replaced'],
      ids['replacement'],
      old,
    ]);
    // A conversation ingested as a node ingests it (POST /v1/memory/ingest), whose middle turn is past retention.
    const api = new PgMemoryApi(team.pool, silentLogger(), {
      queue: new PgJobQueue(team.pool, 'seed', 3),
      settings: { ...memorySettings(loadConfig({ env: { METACLAW_HOME: team.seed } })), autoExtract: false },
    });
    const recent = Date.now() - DAY;
    const walk = await api.ingest('user:alice', 'anxious-dog', [
      { id: 'walk-1', role: 'user', content: 'My greyhound Pepper hides under the bed during thunderstorms.', timestamp: recent },
      { id: 'walk-1', role: 'assistant', content: 'A quiet crate draped with a blanket often calms an anxious dog.', timestamp: old },
      { id: 'walk-2', role: 'user', content: 'Fireworks on New Year are worse still.', timestamp: recent },
    ]);
    api.close();
    for (const [index, name] of ['walkStart', 'walkReply', 'walkNext'].entries()) ids[name] = walk.stored[index]!.id;
    // Over the cap: 110 episodes in Bob's scope, of rising importance, beside a pinned and a core unit of the lowest.
    for (let index = 0; index < 110; index++)
      await addPgMemory(team.pool, {
        scope: 'user:bob',
        type: 'episodic',
        content: `Episode ${index}: the nightly build number ${1000 + index} passed.`,
        importance: 0.1 + index / 200,
        confidence: 1,
        origin: 'manual',
      });
    await addPgMemory(team.pool, {
      scope: 'user:bob',
      type: 'episodic',
      content: 'Pinned episode.',
      importance: 0.01,
      confidence: 1,
      origin: 'manual',
      pinned: true,
    });
    await addPgMemory(team.pool, {
      scope: 'user:bob',
      type: 'episodic',
      content: 'Core episode.',
      importance: 0.01,
      confidence: 1,
      origin: 'manual',
      core: true,
    });
    // Index entries as older nodes left them: written before versions were kept, or with older words; and one a newer node wrote.
    await team.pool.query('INSERT INTO memory_index_words (version, first_seen) VALUES ($1, $2), ($3, $4)', [
      'older-words',
      1,
      'newer-words',
      Date.now() + DAY,
    ]);
    await team.pool.query('UPDATE memory_search_docs SET words_version = NULL WHERE unit_id = $1', [ids['different']]);
    await team.pool.query("UPDATE memory_search_docs SET words_version = 'older-words' WHERE unit_id = $1", [ids['replacement']]);
    await team.pool.query("UPDATE memory_search_docs SET words_version = 'newer-words' WHERE unit_id = $1", [ids['pinnedTurn']]);
    // And a unit whose terms an older tokenizer made: Chinese as ICU's pieces ("优 化", "文 档").
    await team.pool.query("UPDATE memory_units SET terms = '帮 优 化 一下 文 档 结构' WHERE id = $1", [ids['chineseDoc']]);
    await team.pool.query("UPDATE memory_search_docs SET words_version = 'older-words' WHERE unit_id = $1", [ids['chineseDoc']]);
    ownWords = String((await team.pool.query('SELECT words_version FROM memory_search_docs WHERE unit_id = $1', [ids['newerCopy']])).rows[0].words_version);
    nodes.push(
      await startProxy({
        env: teamEnv(),
        config: {
          llm: { api_base: `${team.upstream.url}/v1`, api_key: 'upstream-key' },
          memory: { auto_extract: false, max_units_per_scope: CAP },
          skills: { auto_evolve: false },
        },
      }),
    );
    await jobsDone('memory.housekeeping');
  });

  test('near-duplicates are merged: the older copy is superseded by the newer, linked to it, and search finds only the newer', async () => {
    const older = await unit(ids['olderCopy']!);
    assert.equal(older.body.status, 'superseded', JSON.stringify(older.body));
    assert.equal(older.body.superseded_by, ids['newerCopy']);
    assert.equal((await unit(ids['newerCopy']!)).body.status, 'active');
    assert.equal((await unit(ids['different']!)).body.status, 'active', 'a unit saying something else stays');
    const found = await sendJson(`${nodes[0]!.url}/v1/memory/search`, 'POST', {
      headers: { authorization: `Bearer ${keys['alice']}` },
      body: { query: 'which port does the staging database use?' },
    });
    const hits = (found.body.results as Array<{ id: string }>).map((hit) => hit.id);
    assert.ok(hits.includes(ids['newerCopy']!), JSON.stringify(found.body));
    assert.ok(!hits.includes(ids['olderCopy']!), 'the merged copy is no longer found');
  });

  test('raw turns and superseded units past retention are deleted with their index entries; a pinned one stays', async () => {
    assert.equal((await unit(ids['oldTurn']!)).status, 404);
    assert.equal((await unit(ids['replaced']!)).status, 404);
    assert.equal((await unit(ids['pinnedTurn']!)).status, 200);
    assert.equal((await unit(ids['replacement']!)).body.status, 'active');
    const [orphans] = await rows<{ n: string }>('SELECT count(*) AS n FROM memory_search_docs WHERE seq NOT IN (SELECT rowid FROM memory_units)');
    assert.equal(Number(orphans!.n), 0, 'no index entry outlives its unit');
  });

  test('the raw turn after one past retention follows the turn before it: found by that turn’s words, no longer by the deleted one’s', async () => {
    assert.equal((await unit(ids['walkReply']!)).status, 404, 'the old reply went');
    const search = async (query: string) => {
      const found = await sendJson(`${nodes[0]!.url}/v1/memory/search`, 'POST', { headers: { authorization: `Bearer ${keys['alice']}` }, body: { query } });
      return (found.body.results as Array<{ id: string }>).map((hit) => hit.id);
    };
    const byFirst = await search('greyhound thunderstorms');
    assert.ok(byFirst.includes(ids['walkStart']!) && byFirst.includes(ids['walkNext']!), JSON.stringify(byFirst));
    assert.ok(!(await search('crate blanket')).includes(ids['walkNext']!), 'no trace of the deleted turn’s words');
  });

  test('the re-indexing job makes the terms of units an older tokenizer indexed again: Chinese stored as ICU\'s pieces ("优 化") holds the joined words', async () => {
    await jobsDone('memory.reindex');
    const [row] = await rows<{ terms: string }>('SELECT terms FROM memory_units WHERE id = $1', [ids['chineseDoc']]);
    const terms = row!.terms.split(' ');
    assert.ok(terms.includes('优化') && terms.includes('文档') && !terms.includes('优'), row!.terms);
  });

  test('a scope over its cap keeps 95% of it: the least important episodes go, never a pinned or core one', async () => {
    const kept = await rows<{ content: string }>("SELECT content FROM memory_units WHERE scope = 'user:bob' AND status = 'active' ORDER BY importance");
    assert.equal(kept.length, Math.floor(CAP * 0.95));
    const contents = kept.map((row) => row.content);
    assert.ok(contents.includes('Pinned episode.') && contents.includes('Core episode.'));
    // 112 active: 17 go, the episodes 0..16 (the least important).
    for (let index = 0; index < 17; index++) assert.ok(!contents.some((content) => content.startsWith(`Episode ${index}:`)), `episode ${index} went`);
    assert.ok(contents.some((content) => content.startsWith('Episode 17:')));
  });

  test('a node rewrites the index entries older nodes wrote, with its bundled words, and leaves a newer version’s alone', async () => {
    await jobsDone('memory.reindex');
    const versionOf = async (name: string) =>
      (await rows<{ words_version: string | null }>('SELECT words_version FROM memory_search_docs WHERE unit_id = $1', [ids[name]]))[0]?.words_version;
    assert.equal(await versionOf('different'), ownWords, 'an entry written before versions were kept is rewritten');
    assert.equal(await versionOf('replacement'), ownWords, 'an entry of older words is rewritten');
    assert.equal(await versionOf('pinnedTurn'), 'newer-words', 'an entry a newer node wrote is left alone');
    const found = await sendJson(`${nodes[0]!.url}/v1/memory/search`, 'POST', {
      headers: { authorization: `Bearer ${keys['alice']}` },
      body: { query: 'what sits in front of the production database?' },
    });
    assert.ok(
      (found.body.results as Array<{ id: string }>).some((hit) => hit.id === ids['different']),
      'the rewritten entry is found',
    );
  });
});
