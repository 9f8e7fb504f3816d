import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { MemoryStore } from '../src/memory/store.js';
import { MIGRATIONS } from '../src/store/migrations.js';
import { openDatabase } from '../src/store/index.js';
import { startScriptedProxy } from './support/scripted-proxy.js';
import { tempHome } from './support/proxy.js';

test('a memory stored with a time no Date can hold (as ingest once allowed) is repaired on upgrade: the scope searches and exports again', async () => {
  const home = tempHome();
  // The database as version 25 left it, holding such a unit beside a sound one.
  const old = openDatabase(join(home, 'metaclaw.db'), { migrations: MIGRATIONS.filter((migration) => migration.version <= 25) });
  const store = new MemoryStore(old);
  const base = { scope: 'default', type: 'episodic' as const, origin: 'raw_turn' as const, speaker: 'user' as const, importance: 0.5, sourceSession: 's1' };
  store.add({ ...base, content: 'The boiler was serviced by Tomasz in the spring.', observedAt: 1e17 }, { rawKey: 's1:1:user' });
  store.add({ ...base, content: 'The boiler pressure is back to 1.5 bar.', observedAt: Date.now() - 86_400_000 }, { rawKey: 's1:2:user' });
  old.close();

  const started = await startScriptedProxy({ home, config: { memory: { auto_extract: false }, skills: { auto_evolve: false } } });
  try {
    const search = await fetch(`${started.proxy.url}/v1/memory/search`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query: 'who serviced the boiler?' }),
    });
    assert.equal(search.status, 200, await search.clone().text());
    const results = ((await search.json()) as { results: Array<{ content: string; observed_at: string }> }).results;
    const repaired = results.find((result) => result.content.startsWith('The boiler was serviced'));
    assert.ok(repaired, JSON.stringify(results));
    assert.ok(!Number.isNaN(Date.parse(repaired.observed_at)) && Date.parse(repaired.observed_at) <= Date.now(), repaired.observed_at);
    const exported = await fetch(`${started.proxy.url}/v1/memory/export`);
    assert.equal(exported.status, 200, await exported.clone().text());
    assert.match(await exported.text(), /serviced by Tomasz/);
  } finally {
    await started.close();
  }
});
