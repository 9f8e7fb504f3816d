/**
 * The scheduler's training windows on the team store: two `metaclaw start` nodes in mode auto on
 * one PostgreSQL and one Tinker-compatible service (the strict learning double). With sleep hours
 * that exclude now, a full batch of judged samples waits and every node says why; nodes started
 * again with sleep hours covering now (the trainer's lock taken by a new node) train it once.
 * Real nodes, OpenAI SDK clients and the CLI; only the LLM (judge) and the training service are scripted.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { before, describe, test } from 'node:test';
import { parse } from 'yaml';
import { sendJson } from './support/http.js';
import { postgresSkip } from './support/postgres.js';
import { startProxy, waitFor, type ProxyHandle } from './support/proxy.js';
import { CHAR_VOCAB_SIZE, RL_MODEL } from './support/rl-proxy.js';
import { teamForTests, teamHelpers } from './support/team.js';
import { conversation, startRlTeam } from './support/team-rl.js';
import { TinkerDouble } from './support/tinker-double.js';

const OWNER_KEY = 'owner-key-for-the-team-rl-schedule-test';

const team = teamForTests('team_rl_schedule');
let double: TinkerDouble;
const { nodes } = team;
const keys: Record<string, string> = {};
/** the nodes' first sleep hours, three to four hours from now: no window is open */
let closed: { sleep_start: string; sleep_end: string };

const { teamEnv, client, rows, startTeam } = teamHelpers(() => team, OWNER_KEY, keys);

/** Local HH:MM `offsetHours` from now: the nodes read sleep hours in the local time of this machine, as this test does. */
function clock(offsetHours: number): string {
  const at = new Date(Date.now() + offsetHours * 3_600_000);
  return `${String(at.getHours()).padStart(2, '0')}:${String(at.getMinutes()).padStart(2, '0')}`;
}

interface NodeStatus {
  mode_reason: string;
  rl: { training: { trigger: string; window: string; ready_samples: number; trainer: 'this node' | 'another node' | 'no node' } | null } | null;
  scheduler: {
    enabled: boolean;
    state: string;
    window: { open: boolean; sources: string[] };
    sources: Array<{ source: string; available: boolean; open: boolean; detail: string }>;
    keyboard_idle: { available: boolean; reason?: string };
    next_window: Array<{ source: string }>;
  };
}

async function statusOf(node: ProxyHandle): Promise<NodeStatus> {
  const answer = await sendJson(`${node.url}/status`, 'GET', { headers: { authorization: `Bearer ${OWNER_KEY}` } });
  assert.equal(answer.status, 200, JSON.stringify(answer.body));
  return answer.body as NodeStatus;
}

function steps(): Promise<Array<{ step: string; status: string; samples: number }>> {
  return rows('SELECT step, status, samples FROM rl_steps ORDER BY step');
}

describe('team mode: in mode auto the trainer steps only in the scheduler’s windows', { skip: postgresSkip() }, () => {
  before(async () => {
    double = await TinkerDouble.start({ vocabSize: CHAR_VOCAB_SIZE, supportedModels: [RL_MODEL] });
    team.closeAfter(() => double.close());
    closed = { sleep_start: clock(3), sleep_end: clock(4) };
    const config = { mode: 'auto', scheduler: closed };
    nodes.push(...(await startRlTeam({ seed: team.seed, startTeam, upstream: team.upstream, double, config })));
  });

  test('outside sleep hours a full batch of judged samples waits untrained, and /status and `scheduler next-window` on every node say the window is closed and why', async () => {
    await waitFor(async () => (await Promise.all(nodes.map(statusOf))).every((status) => status.rl?.training?.trainer !== undefined), 30_000, 200);
    await Promise.all([
      conversation(client(nodes[0]!, 'alice'), 'closed-a', ['deploy the api', 'now the worker']),
      conversation(client(nodes[1]!, 'bob'), 'closed-b', ['rotate the keys', 'check the logs']),
    ]);
    await waitFor(async () => Number((await rows<{ count: string }>("SELECT COUNT(*) AS count FROM rl_samples WHERE judge_state = 'scored'"))[0]!.count) === 4);
    // The trainer counts the full batch (it reads the count every second) and still does not step.
    await waitFor(
      async () =>
        (await Promise.all(nodes.map(statusOf))).some((status) => status.rl?.training?.trainer === 'this node' && status.rl.training.ready_samples === 4),
      15_000,
      200,
    );
    await new Promise((resolve) => setTimeout(resolve, 3_000)); // three of the trainer's ticks
    assert.deepEqual(await steps(), [], 'no step outside a window');
    assert.equal(double.callsTo('/api/v1/forward_backward').length, 0);

    for (const node of nodes) {
      const status = await statusOf(node);
      assert.equal(status.scheduler.enabled, true);
      assert.equal(status.scheduler.state, 'IDLE_WAIT');
      assert.equal(status.scheduler.window.open, false);
      const sleep = status.scheduler.sources.find((source) => source.source === 'sleep_hours')!;
      assert.deepEqual([sleep.available, sleep.open], [true, false]);
      assert.match(sleep.detail, new RegExp(`${closed.sleep_start}–${closed.sleep_end} \\(not now\\)`));
      // A server has no keyboard, and one node sees only part of the team's turns: neither idle source is read.
      assert.equal(status.scheduler.keyboard_idle.available, false);
      assert.match(status.scheduler.keyboard_idle.reason!, /not read on a team node/);
      const proxyIdle = status.scheduler.sources.find((source) => source.source === 'proxy_idle')!;
      assert.deepEqual([proxyIdle.available, proxyIdle.open], [false, false]);
      assert.deepEqual(
        status.scheduler.next_window.map((window) => window.source),
        ['sleep_hours'],
      );
      assert.equal(status.rl!.training!.trigger, 'window');
      assert.match(status.mode_reason, /one node trains it with the tinker backend, in the scheduler’s windows/);
      assert.match(status.rl!.training!.window, /^IDLE_WAIT: /);
    }
    const next = await nodes[0]!.cli(['scheduler', 'next-window']);
    assert.equal(next.code, 0, next.stderr);
    assert.match(next.stdout, /Next window: .* by sleep_hours \(sleep hours /);
  });

  test('nodes started again with sleep hours covering now: the new trainer runs the waiting batch in the window, exactly once, and the node’s dashboard shows the window', async () => {
    const config = parse(readFileSync(join(nodes[0]!.home, 'config.yaml'), 'utf8')) as Record<string, unknown>;
    for (const node of nodes) await node.stop();
    // Sleep hours from an hour ago to two hours ahead: a window is open at start.
    const open = { ...config, scheduler: { sleep_start: clock(-1), sleep_end: clock(2) } };
    const restarted: ProxyHandle[] = [];
    for (const node of nodes) restarted.push(await startProxy({ home: node.home, env: teamEnv(), config: open }));
    nodes.splice(0, nodes.length, ...restarted);

    const done = await waitFor(
      async () => {
        const found = await steps();
        return found.some((row) => row.status === 'done') && found;
      },
      60_000,
      250,
    );
    await new Promise((resolve) => setTimeout(resolve, 2_500)); // a moment for a second step, should a node wrongly take one
    assert.deepEqual(await steps(), done, 'no other step was taken');
    assert.deepEqual(
      done.map((row) => [Number(row.step), row.status, row.samples]),
      [[1, 'done', 4]],
    );
    assert.equal(double.callsTo('/api/v1/forward_backward').length, 1, 'the step ran once, on one node');

    for (const node of nodes) {
      const status = await statusOf(node);
      assert.equal(status.scheduler.window.open, true);
      assert.deepEqual(status.scheduler.window.sources, ['sleep_hours']);
      assert.match(status.rl!.training!.window, /^WINDOW_OPEN: /);
      const learning = await sendJson(`${node.url}/v1/dashboard/learning?days=7`, 'GET', { headers: { authorization: `Bearer ${OWNER_KEY}` } });
      assert.equal(learning.status, 200, JSON.stringify(learning.body));
      const windows = learning.body.windows as Array<{ closed_at: number | null; sources: string[] }>;
      assert.deepEqual(
        windows.map((window) => [window.closed_at, window.sources]),
        [[null, ['sleep_hours']]],
        'the window this node has seen open since it started',
      );
    }
  });
});
