/**
 * `metaclaw doctor`'s canary against a node of a team store: it checks the path an agent's request
 * takes (skills and memory injected, the turn recorded), and leaves nothing behind that learns — no
 * memory (raw turn or the canary's own), no learning job, no RL sample.
 */
import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import { postgresSkip } from './support/postgres.js';
import { startProxy, waitFor, type ProxyHandle } from './support/proxy.js';
import { teamForTests, teamHelpers } from './support/team.js';

const OWNER_KEY = 'owner-key-for-the-team-doctor-canary-test';
const team = teamForTests('team_doctor_canary');
const keys: Record<string, string> = {};
const { cli, teamEnv, rows, addMembers } = teamHelpers(() => team, OWNER_KEY, keys);
let node: ProxyHandle;

interface DoctorReport {
  checks: Array<{ name: string; verdict: string; detail: string }>;
}

describe('metaclaw doctor on a node of a team store', { skip: postgresSkip() }, () => {
  before(async () => {
    await cli(['store', 'migrate']);
    await cli(['skills', 'install-starter']);
    await addMembers(['alice']);
    node = await startProxy({
      env: teamEnv(),
      config: { llm: { api_base: `${team.upstream.url}/v1`, api_key: 'upstream-key', model_id: 'm' }, rl: { enabled: true } },
    });
    team.nodes.push(node);
  });

  for (const who of ['the owner', 'a member'] as const)
    test(`with ${who}'s key the canary passes and leaves no memory, learning job, skill evidence or RL sample behind`, async () => {
      const before = await counts();
      const result = await node.cli(['doctor', '--json'], who === 'a member' ? { env: { METACLAW_PROXY_API_KEY: keys['alice']! } } : {});
      const report = JSON.parse(result.stdout) as DoctorReport;
      // Whatever the verdict: the canary's turn is recorded by now (the check reads it back), so the nodes have had their chance to queue jobs for it.
      await waitFor(async () => (await rows("SELECT 1 FROM turns WHERE session_id LIKE '%metaclaw-doctor-%'")).length === (who === 'a member' ? 2 : 1), 10_000);
      await new Promise((resolve) => setTimeout(resolve, 3_000));
      assert.deepEqual(
        await rows("SELECT id, scope, content FROM memory_units WHERE source_session LIKE '%metaclaw-doctor-%' OR content LIKE '%Health check%'"),
        [],
      );
      assert.deepEqual(await counts(), before, 'nothing learns from the canary');
      const canary = report.checks.find((check) => check.name === 'canary');
      assert.equal(canary?.verdict, 'pass', JSON.stringify(report.checks.filter((check) => check.verdict !== 'pass')));
      const session = /recorded in session ([^\s;]+)/.exec(canary.detail)?.[1];
      assert.ok(session, canary.detail);
      if (who === 'a member') {
        assert.equal(session, 'alice~' + session.split('~')[1], 'a member’s session is stored behind the member’s name');
        assert.match(JSON.stringify(report.checks), /writes memory to scope user:alice only/);
      }
    });
});

async function counts(): Promise<Record<string, number>> {
  const count = async (sql: string) => Number((await rows<{ n: string }>(sql))[0]!.n);
  return {
    memory: await count('SELECT count(*) AS n FROM memory_units'),
    rawTurns: await count("SELECT count(*) AS n FROM memory_units WHERE origin = 'raw_turn'"),
    // Jobs about the canary's session or turn (adding and deleting its memory queues search keys, which learn nothing).
    jobs: await count("SELECT count(*) AS n FROM jobs WHERE payload LIKE '%metaclaw-doctor-%' OR kind NOT IN ('memory.search_keys', 'memory.housekeeping')"),
    samples: await count('SELECT count(*) AS n FROM rl_samples'),
    skillUsage: await count('SELECT count(*) AS n FROM skill_usage'),
    outcomes: await count('SELECT count(*) AS n FROM turn_outcomes'),
  };
}
