import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { runCli, startProxy, tempHome } from './support/proxy.js';
import { ScriptedUpstream } from './support/upstream.js';
import { sendJson } from './support/http.js';

/** Calls made as the `proj` scope's own agent would (memory routes reach only the caller's scope). */
const PROJ = { 'x-memory-scope': 'proj' };

function call(url: string, method: string, body?: unknown): Promise<{ status: number; body: any }> {
  return sendJson(url, method, { body, headers: { 'content-type': 'application/json', ...PROJ } });
}

describe('memory API and CLI', () => {
  test('ingest keeps caller turn ids in provenance; bad bodies are 400s naming the field; edit, export, import and scope deletion work', async () => {
    const upstream = await ScriptedUpstream.start();
    const proxy = await startProxy({ config: { llm: { api_base: `${upstream.url}/v1`, api_key: 'k' }, memory: { auto_extract: false } } });
    try {
      const base = `${proxy.url}/v1/memory`;
      const ingested = await call(`${base}/ingest`, 'POST', {
        scope: 'proj',
        session_id: 'imported-chat',
        turns: [
          { role: 'user', content: 'Our API routes all live in src/routes/.', id: 'turn-a', timestamp: '2026-11-01T10:00:00Z' },
          { role: 'assistant', content: 'Noted.', id: 'turn-b' },
        ],
      });
      assert.equal(ingested.status, 200);
      assert.deepEqual(
        ingested.body.stored.map((item: { turn_id: string }) => item.turn_id),
        ['turn-a', 'turn-b'],
      );
      const found = await call(`${base}/search`, 'POST', { query: 'where do the API routes live', scope: 'proj' });
      const hit = found.body.results[0];
      assert.equal(hit.content, 'Our API routes all live in src/routes/.');
      assert.deepEqual(hit.source, { session_id: 'imported-chat', turn_ids: ['turn-a'] });
      assert.equal(hit.observed_at, '2026-11-01T10:00:00.000Z', 'observed when it was said, not when processed');

      // A time no Date can hold was stored before, and then every search and export of the scope was a 500.
      const farFuture = await call(`${base}/ingest`, 'POST', {
        session_id: 'bad-time',
        turns: [{ role: 'user', content: 'Bad time', timestamp: 1e17 }],
      });
      assert.equal(farFuture.status, 400, JSON.stringify(farFuture.body));
      assert.equal(farFuture.body.error.param, 'turns.0.timestamp');
      assert.equal((await fetch(`${base}/export?scope=proj`, { headers: PROJ })).status, 200);
      // A session id no chat request could name (the proxy refuses ids over 256 characters) is refused here too.
      const longId = await call(`${base}/ingest`, 'POST', { session_id: 's'.repeat(257), turns: [{ role: 'user', content: 'Too long an id' }] });
      assert.equal(longId.status, 400, JSON.stringify(longId.body));
      assert.equal(longId.body.error.code, 'session_id_too_long');
      assert.equal(longId.body.error.param, 'session_id');
      assert.equal((await call(`${base}/search`, 'POST', { query: 'Too long an id', scope: 'proj' })).body.results.length, 0, 'nothing stored');
      const missing = await call(`${base}/ingest`, 'POST', { turns: [{ role: 'user', content: 'x' }] });
      assert.equal(missing.status, 400);
      assert.equal(missing.body.error.param, 'session_id');
      const badType = await call(base, 'POST', { type: 'gossip', content: 'x' });
      assert.equal(badType.status, 400);
      assert.equal(badType.body.error.param, 'type');
      assert.equal((await call(`${base}/search`, 'POST', '{oops')).status, 400);
      // A field of the wrong type is named as such; only a missing one is "required".
      const wrongType = await call(`${base}/search`, 'POST', { query: 5 });
      assert.equal(wrongType.status, 400);
      assert.equal(wrongType.body.error.message, 'query: Invalid input: expected string, received number');
      assert.equal((await call(`${base}/search`, 'POST', {})).body.error.message, 'query: required');
      const notANumber = await call(base, 'POST', { type: 'semantic', content: 'x', importance: 'high' });
      assert.equal(notANumber.body.error.message, 'importance: Invalid input: expected number, received string');

      const added = await call(base, 'POST', { scope: 'proj', type: 'project_state', content: 'Deploys happen on Tuesdays.' });
      const patched = await call(`${base}/${added.body.id}`, 'PATCH', { content: 'Deploys happen on Wednesdays.', pinned: true });
      assert.equal(patched.body.content, 'Deploys happen on Wednesdays.');
      assert.equal(patched.body.pinned, true);
      assert.equal((await call(`${base}/mem_nope`, 'PATCH', { pinned: true })).status, 404);

      const exported = await fetch(`${base}/export?scope=proj`, { headers: PROJ });
      const jsonl = await exported.text();
      assert.equal(exported.headers.get('content-type'), 'application/x-ndjson');
      assert.equal(jsonl.trim().split('\n').length, 3);
      const stats = await call(`${base}/stats?scope=proj`, 'GET');
      assert.equal(stats.body.scopes[0].active, 3);

      const wiped = await call(`${base}?scope=proj`, 'DELETE');
      assert.deepEqual(wiped.body, { scope: 'proj', deleted: 3 });
      const reimported = await call(`${base}/import?scope=proj`, 'POST', jsonl);
      assert.equal(reimported.body.imported, 3);
      assert.equal((await call(`${base}/stats?scope=proj`, 'GET')).body.scopes[0].active, 3);
    } finally {
      await proxy.dispose();
      await upstream.close();
    }
  });

  test('metaclaw memory add, search, show, edit, pin, core, forget, stats, export, import, ingest', async () => {
    const home = tempHome();
    const add = await runCli(['memory', 'add', 'Never deploy on Fridays.', '--type', 'preference', '--core', '--json'], { home });
    assert.equal(add.code, 0, add.stderr);
    const unit = JSON.parse(add.stdout);
    assert.equal(unit.core, true);
    const search = await runCli(['memory', 'search', 'deploy Fridays'], { home });
    assert.match(search.stdout, new RegExp(`${unit.id} +\\[preference; standing\\]`));
    assert.match((await runCli(['memory', 'show', unit.id], { home })).stdout, /origin manual/);
    assert.match((await runCli(['memory', 'edit', unit.id, '--content', 'Never deploy on Fridays or weekends.'], { home })).stdout, /Fridays or weekends/);
    assert.match((await runCli(['memory', 'pin', unit.id], { home })).stdout, /Pinned/);
    const core = JSON.parse((await runCli(['memory', 'core', '--json'], { home })).stdout);
    assert.equal(core[0].content, 'Never deploy on Fridays or weekends.');
    assert.equal(core[0].pinned, true);

    const conversation = join(home, 'chat.jsonl');
    writeFileSync(
      conversation,
      [
        JSON.stringify({ role: 'user', content: 'We keep infrastructure code in the ops/ folder.' }),
        JSON.stringify({ role: 'assistant', content: 'Got it.' }),
      ].join('\n'),
    );
    const ingest = await runCli(['memory', 'ingest', conversation, '--session', 'cli-import'], { home });
    assert.match(ingest.stdout, /Stored 2 turns of session cli-import; extraction queued/);

    const exported = join(home, 'memories.jsonl');
    assert.match((await runCli(['memory', 'export', '--output', exported], { home })).stdout, /Exported 3 memories/);
    const stats = await runCli(['memory', 'stats'], { home });
    assert.match(stats.stdout, /scope default: 3 active \(1 standing instruction\)/);
    assert.match(stats.stdout, /tables: .*memory_units 3/);

    assert.match((await runCli(['memory', 'forget', unit.id], { home })).stdout, /Forgot/);
    assert.equal((await runCli(['memory', 'show', unit.id], { home })).code, 1);
    const refused = await runCli(['memory', 'forget-scope', 'default'], { home });
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /--yes/);
    assert.match((await runCli(['memory', 'forget-scope', 'default', '--yes'], { home })).stdout, /Forgot 2 memories/);
    const imported = await runCli(['memory', 'import', exported], { home });
    assert.match(imported.stdout, /Imported 3 memories; skipped 0/);
  });

  test('memory add and edit refuse empty content, as the HTTP API does; ingest refuses what POST /v1/memory/ingest refuses and keeps a speaker name', async () => {
    const home = tempHome();
    for (const args of [
      ['memory', 'add', ''],
      ['memory', 'add', '   '],
      ['memory', 'add', 'x'.repeat(4_001)],
    ]) {
      const refused = await runCli(args, { home });
      assert.equal(refused.code, 1, `${args.join(' ').slice(0, 40)}: ${refused.stdout}`);
      assert.match(refused.stderr, /content/);
    }
    const added = JSON.parse((await runCli(['memory', 'add', 'Deploys happen on Tuesdays.', '--json'], { home })).stdout);
    const blanked = await runCli(['memory', 'edit', added.id, '--content', ' '], { home });
    assert.equal(blanked.code, 1, blanked.stdout);
    assert.match(blanked.stderr, /content/);
    for (const args of [[], ['--pin', '--unpin']]) {
      const refused = await runCli(['memory', 'edit', added.id, ...args], { home });
      assert.equal(refused.code, 1, `edit ${args.join(' ')}: ${refused.stdout}`);
      assert.match(refused.stderr, /nothing to change|not both/);
    }
    assert.equal(JSON.parse((await runCli(['memory', 'show', added.id, '--json'], { home })).stdout).content, 'Deploys happen on Tuesdays.');

    const empty = join(home, 'empty.json');
    writeFileSync(empty, '[]');
    const chat = join(home, 'chat.json');
    writeFileSync(chat, JSON.stringify([{ role: 'user', name: 'Marek', content: 'I play the cello in a quartet.' }]));
    const bad = join(home, 'bad.json');
    writeFileSync(bad, JSON.stringify([null, { role: 'user', content: 'x', timestamp: { when: 'today' } }]));
    const badTime = join(home, 'bad-time.json');
    writeFileSync(badTime, JSON.stringify([{ role: 'user', content: 'x', timestamp: -1e20 }]));
    for (const args of [
      ['memory', 'ingest', badTime],
      ['memory', 'ingest', empty],
      ['memory', 'ingest', chat, '--session', ''],
      ['memory', 'ingest', chat, '--session', 's'.repeat(257)],
      ['memory', 'ingest', bad],
    ]) {
      const refused = await runCli(args, { home });
      assert.equal(refused.code, 1, `${args.join(' ')}: ${refused.stdout}`);
      assert.doesNotMatch(refused.stderr, /Cannot read properties/);
    }
    const noScope = await runCli(['memory', 'add', 'Scoped nowhere.', '--scope', ''], { home });
    assert.equal(noScope.code, 1, noScope.stdout);
    assert.match(noScope.stderr, /--scope/);
    assert.match((await runCli(['memory', 'stats'], { home })).stdout, /scope default: 1 active/, 'nothing refused was stored');
    assert.equal((await runCli(['memory', 'ingest', chat, '--session', 'quartet'], { home })).code, 0);
    const found = JSON.parse((await runCli(['memory', 'search', 'Marek', '--json'], { home })).stdout);
    assert.equal(found[0]?.content, 'I play the cello in a quartet.', "the speaker's name is searchable with the turn, as over HTTP");
  });

  test('memory search refuses an empty query, as the search route does; forget-scope counts one memory as one', async () => {
    const home = tempHome();
    for (const query of ['', '   ']) {
      const refused = await runCli(['memory', 'search', query], { home });
      assert.equal(refused.code, 1, refused.stdout);
      assert.match(refused.stderr, /QUERY: must not be empty/);
    }
    assert.equal((await runCli(['memory', 'add', 'Deploys happen on Tuesdays.', '--scope', 'one'], { home })).code, 0);
    assert.match((await runCli(['memory', 'forget-scope', 'one', '--yes'], { home })).stdout, /^Forgot 1 memory of scope one\.$/m);
  });

  test('importing an export into the install it came from adds nothing: raw turns are already in memory too', async () => {
    const home = tempHome();
    const chat = join(home, 'chat.json');
    writeFileSync(
      chat,
      JSON.stringify([
        { role: 'user', content: 'My sister moved to Porto last month.' },
        { role: 'assistant', content: 'How exciting for your sister!' },
      ]),
    );
    assert.equal((await runCli(['memory', 'ingest', chat, '--session', 'porto'], { home })).code, 0);
    assert.equal((await runCli(['memory', 'add', 'Deploys happen on Tuesdays.'], { home })).code, 0);
    const exported = join(home, 'backup.jsonl');
    assert.match((await runCli(['memory', 'export', '-o', exported], { home })).stdout, /Exported 3 memories/);
    const again = await runCli(['memory', 'import', exported], { home });
    assert.match(again.stdout, /Imported 0 memories; skipped 3/);
    assert.match((await runCli(['memory', 'stats'], { home })).stdout, /scope default: 3 active/);

    const fresh = tempHome();
    assert.match(
      (await runCli(['memory', 'import', exported], { home: fresh })).stdout,
      /Imported 3 memories; skipped 0/,
      'a new install still takes every line',
    );
  });

  test('memory import fails (exit 1) when no line of the file could be read as a memory, or the file is empty; a file of lines already here still succeeds', async () => {
    const home = tempHome();
    const wrong = join(home, 'notes.txt');
    writeFileSync(wrong, 'Deploys happen on Tuesdays.\nThe hangar key is in the red box.\n');
    const refused = await runCli(['memory', 'import', wrong], { home });
    assert.equal(refused.code, 1, refused.stdout);
    assert.match(refused.stdout, /Imported 0 memories; skipped 2/);
    assert.match(refused.stderr, /nothing was imported: 2 of 2 lines could not be read as memories \(first, line 1: not JSON\)/);
    const asJson = await runCli(['memory', 'import', wrong, '--json'], { home });
    assert.equal(asJson.code, 1);
    assert.equal(JSON.parse(asJson.stdout).skipped.length, 2, 'the report is printed before the refusal');

    const empty = join(home, 'empty.jsonl');
    writeFileSync(empty, '\n\n');
    const none = await runCli(['memory', 'import', empty], { home });
    assert.equal(none.code, 1);
    assert.match(none.stderr, /holds no memories: nothing was imported/);

    const backup = join(home, 'backup.jsonl');
    assert.equal((await runCli(['memory', 'add', 'Deploys happen on Tuesdays.'], { home })).code, 0);
    assert.equal((await runCli(['memory', 'export', '-o', backup], { home })).code, 0);
    const again = await runCli(['memory', 'import', backup], { home });
    assert.equal(again.code, 0, again.stderr);
    assert.match(again.stdout, /Imported 0 memories; skipped 1/);
    const mixed = join(home, 'mixed.jsonl');
    writeFileSync(mixed, `not json\n${JSON.stringify({ content: 'The office closes at six.', type: 'semantic' })}\n`);
    const partly = await runCli(['memory', 'import', mixed], { home });
    assert.equal(partly.code, 0, 'one readable line imported: the bad one is reported, not fatal');
    assert.match(partly.stdout, /Imported 1 memory; skipped 1/);
    assert.match((await runCli(['memory', 'stats'], { home })).stdout, /scope default: 2 active/);
  });

  test('memory show, edit, pin, unpin and forget honour --scope: a unit of another scope is not found there and is left as it was; without --scope the id reaches any scope', async () => {
    const home = tempHome();
    const unit = JSON.parse((await runCli(['memory', 'add', 'The hangar key is in the red box.', '--scope', 'user:alice', '--json'], { home })).stdout);
    for (const args of [
      ['show', unit.id],
      ['show', unit.id, '--json'],
      ['edit', unit.id, '--content', 'The hangar key is lost.'],
      ['pin', unit.id],
      ['unpin', unit.id],
      ['forget', unit.id],
    ]) {
      const refused = await runCli(['memory', ...args, '--scope', 'user:bob'], { home });
      assert.equal(refused.code, 1, `${args.join(' ')}: ${refused.stdout}`);
      assert.match(refused.stderr, new RegExp(`No memory ${unit.id} in scope "user:bob" \\(it is in scope "user:alice"`), args.join(' '));
    }
    const kept = JSON.parse((await runCli(['memory', 'show', unit.id, '--json'], { home })).stdout);
    assert.deepEqual({ content: kept.content, pinned: kept.pinned }, { content: 'The hangar key is in the red box.', pinned: false }, 'nothing changed');
    const own = await runCli(['memory', 'edit', unit.id, '--content', 'The hangar key is in the blue box.', '--scope', 'user:alice'], { home });
    assert.equal(own.code, 0, own.stderr);
    assert.match((await runCli(['memory', 'show', unit.id, '--scope', 'user:alice'], { home })).stdout, /blue box/);
    assert.equal(
      (await runCli(['memory', 'show', 'mem_never', '--scope', 'user:alice'], { home })).stderr.trim(),
      'No memory mem_never in scope "user:alice".',
    );
  });

  test('a --scope longer than 256 characters is refused, as over HTTP, and nothing is stored under it; 256 is accepted', async () => {
    const home = tempHome();
    const refused = await runCli(['memory', 'add', 'The spare key is under the mat.', '--scope', 'u'.repeat(257)], { home });
    assert.equal(refused.code, 1, refused.stdout);
    assert.match(refused.stderr, /--scope: is 257 characters long; MetaClaw accepts at most 256/);
    const stats = JSON.parse((await runCli(['memory', 'stats', '--json'], { home })).stdout) as { scopes: unknown[] };
    assert.deepEqual(stats.scopes, []);
    assert.equal((await runCli(['memory', 'add', 'The spare key is under the mat.', '--scope', 'u'.repeat(256)], { home })).code, 0);
  });

  test('memory show prints the whole content, line breaks kept; the one-line lists stay short', async () => {
    const home = tempHome();
    const content = `${Array.from({ length: 60 }, (_, index) => `word${index}`).join(' ')}\nSecond line of the note.`;
    const unit = JSON.parse((await runCli(['memory', 'add', content, '--json'], { home })).stdout);
    const shown = await runCli(['memory', 'show', unit.id], { home });
    assert.equal(shown.code, 0);
    for (const text of content.split('\n')) assert.ok(shown.stdout.includes(`\n  ${text}\n`), shown.stdout);
    assert.match(shown.stdout, /origin manual/);
    const listed = await runCli(['memory', 'search', 'word59'], { home });
    assert.ok(!listed.stdout.includes('Second line'), 'search keeps one line per unit');
  });
});
