/**
 * Team skills: how long after a write on one node another node's in-memory index holds it (issue 16's
 * aim: ≤ 1 s). Two nodes (separate pools) on a throwaway PostgreSQL cluster; node B follows the team
 * store with a SkillSubscription (LISTEN/NOTIFY, its slow poll off so only notifications count); node
 * A edits one skill `--writes` times, one after another. Timed: from the start of A's write to B's
 * mirror holding that version. Needs Debian's `postgresql` (server binaries).
 *
 * Standalone: `node --import tsx bench/team-skill-refresh.ts [--writes 100]`
 */
import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import pg from 'pg';
import { SkillMirror } from '../src/skills/mirror.js';
import { migratePostgres } from '../src/store/postgres/index.js';
import { PgSkillStore } from '../src/store/postgres/skill-store.js';
import { SkillSubscription } from '../src/store/postgres/skill-subscription.js';
import { startPostgres } from '../test/support/postgres.js';
import { summarize } from './stats.js';
import { numberOption } from './options.js';

const NAME = 'deploy-checklist';

/** A promise per awaited version, settled by one listener on the mirror's changes. */
function versionWatch(mirror: SkillMirror): (version: number) => Promise<void> {
  let waiting: { version: number; resolve: () => void } | undefined;
  const check = () => {
    if (waiting && (mirror.get(NAME)?.version ?? 0) >= waiting.version) {
      waiting.resolve();
      waiting = undefined;
    }
  };
  mirror.onChange(check);
  return (version) =>
    new Promise((resolve) => {
      waiting = { version, resolve };
      check();
    });
}

export async function measureSkillRefresh(writes: number): Promise<{ latency: ReturnType<typeof summarize>; max: number; loadAverage: string }> {
  const server = await startPostgres();
  const url = server.createDatabase('skill_refresh');
  const poolA = new pg.Pool({ connectionString: url, max: 2 });
  const poolB = new pg.Pool({ connectionString: url, max: 2 });
  const mirror = new SkillMirror();
  const subscription = new SkillSubscription(url, new PgSkillStore(poolB), mirror, { pollMs: 0 });
  try {
    await migratePostgres(poolA);
    await subscription.start();
    const writer = new PgSkillStore(poolA);
    const held = versionWatch(mirror);
    const samples: number[] = [];
    let version = 0;
    for (let index = 0; index < writes; index++) {
      const started = performance.now();
      const written = await writer.write(
        { name: NAME, description: 'Use before every production deploy.', body: `Checklist, edit ${index}: tag the release, run the smoke tests.` },
        { basedOn: version, source: 'bench' },
      );
      version = written.version;
      await held(version);
      samples.push(performance.now() - started);
    }
    return {
      latency: summarize(samples),
      max: Math.round(Math.max(...samples) * 1000) / 1000,
      loadAverage: readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' '),
    };
  } finally {
    await subscription.stop();
    await poolA.end();
    await poolB.end();
    server.stop();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const writes = numberOption('writes', 100);
  const { latency, max, loadAverage } = await measureSkillRefresh(writes);
  console.log(`\n### Team skill refresh across nodes (${writes} edits on node A; until node B's index holds each; ms)\n`);
  console.log('| p50 | p90 | p99 | max | aim | load average |');
  console.log('|---:|---:|---:|---:|---|---|');
  console.log(`| ${latency.p50} | ${latency.p90} | ${latency.p99} | ${max} | ≤ 1000 | ${loadAverage} |`);
}
