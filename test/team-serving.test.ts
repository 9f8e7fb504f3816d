/**
 * Team mode served end to end: three proxies (`metaclaw start` with METACLAW_DATABASE_URL) on one
 * PostgreSQL, three members with keys from `metaclaw team add-member`, a personal install moved in
 * with `metaclaw store import-sqlite`. Real OpenAI SDK clients; only the LLM is scripted.
 */
import assert from 'node:assert/strict';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { before, describe, test } from 'node:test';
import OpenAI from 'openai';
import { TurnJournal } from '../src/conversation/turn-journal.js';
import { openDatabase } from '../src/store/index.js';
import { sendJson } from './support/http.js';
import { appendAnsweredTurn } from './support/journal.js';
import { runCli, startProxy, tempHome, waitFor, type CliResult, type ProxyHandle } from './support/proxy.js';
import { postgresSkip } from './support/postgres.js';
import { teamForTests, teamHelpers } from './support/team.js';

const OWNER_KEY = 'owner-key-for-the-team-store-test';
const MEMBERS = ['alice', 'bob', 'carol'] as const;
type MemberName = (typeof MEMBERS)[number];

const team = teamForTests('team_serving');
const { nodes } = team;
const keys = {} as Record<MemberName, string>;
const { memoryCounts } = teamHelpers(() => team, OWNER_KEY, keys);

function teamEnv(): Record<string, string> {
  return { METACLAW_DATABASE_URL: team.url, METACLAW_PROXY_API_KEY: OWNER_KEY };
}

async function cli(args: string[], home = team.seed): Promise<string> {
  const result = await runCli(args, { home, env: teamEnv() });
  assert.equal(result.code, 0, `${args.join(' ')}: ${result.stderr}`);
  return result.stdout;
}

function skillFile(folder: string, name: string, description: string, body: string): void {
  mkdirSync(join(folder, name), { recursive: true });
  writeFileSync(join(folder, name, 'SKILL.md'), `---\nname: ${name}\ndescription: ${JSON.stringify(description)}\n---\n\n${body}\n`);
}

async function count(sql: string, params: unknown[] = []): Promise<number> {
  return Number((await team.pool.query<{ n: string }>(sql, params)).rows[0]!.n);
}

/** What the upstream was sent for the model request whose user message holds `marker`. */
function sentFor(marker: string): string {
  const found = team.upstream.modelRequests().find((request) => request.raw.includes(marker));
  assert.ok(found, `the upstream got the request marked ${marker}`);
  return found.raw;
}

function ask(node: ProxyHandle, member: MemberName, text: string): Promise<OpenAI.Chat.Completions.ChatCompletion> {
  const client = new OpenAI({ baseURL: `${node.url}/v1`, apiKey: keys[member], maxRetries: 0 });
  return client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: text }] });
}

/** Asks the check question until one request's recall runs in full (at most 5 tries); returns that request's marker. */
async function askWithFullRecall(node: ProxyHandle, member: MemberName, label: string): Promise<string> {
  for (let attempt = 0; attempt < 5; attempt++) {
    const marker = `[${label}-${attempt}]`;
    const before = await memoryCounts(node);
    await ask(node, member, `${marker} Which editor is my favourite one, and which staging cluster do we use?`);
    const after = await memoryCounts(node);
    if (after.timeouts + after.failures === before.timeouts + before.failures) return marker;
  }
  assert.fail(`${label}: recall ran out of its budget on 5 tries`);
}

describe('team mode: proxies serving from one PostgreSQL', { skip: postgresSkip() }, () => {
  before(async () => {
    // A personal install with memories in three scopes and a skill, moved into the team store.
    const personal = { METACLAW_PROXY_API_KEY: OWNER_KEY };
    for (const [content, scope] of [
      ["Alice's favourite editor is Helix, with the default keymap.", 'user:alice'],
      ["Bob's favourite editor is Emacs, with evil mode.", 'user:bob'],
      ['The shared staging cluster of the team is called blue-harbor.', 'team'],
    ] as const) {
      const added = await runCli(['memory', 'add', content, '--scope', scope, '--type', 'semantic'], { home: team.seed, env: personal });
      assert.equal(added.code, 0, added.stderr);
    }
    skillFile(
      join(team.seed, 'skills'),
      'postgres-vacuum-tuning',
      'Tune PostgreSQL autovacuum for a table with heavy update churn: thresholds, scale factors and cost limits.',
      '# Autovacuum tuning\n\nLower autovacuum_vacuum_scale_factor for the hot table, raise the cost limit, and watch n_dead_tup.',
    );
    await cli(['store', 'migrate']);
    assert.match(await cli(['store', 'import-sqlite', team.seed]), /Skills from .*: 1 imported/);
    for (const name of MEMBERS) keys[name] = (JSON.parse(await cli(['team', 'add-member', name, '--json'])) as { key: string }).key;
    for (let index = 0; index < 3; index++) {
      nodes.push(await startProxy({ env: teamEnv(), config: { llm: { api_base: `${team.upstream.url}/v1`, api_key: 'upstream-key' } } }));
    }
  });

  test("three nodes serve three members at once: every turn is stored once, in the member's own scope, and no member's memories reach another's requests", async () => {
    const before = await count('SELECT count(*) AS n FROM turns');
    const sends: Array<Promise<unknown>> = [];
    for (const [index, node] of nodes.entries())
      for (const member of MEMBERS)
        for (let round = 0; round < 8; round++)
          sends.push(ask(node, member, `[${member}-${index}-${round}] Good morning, what should we look at first today?`));
    const answers = await Promise.all(sends);
    assert.equal(answers.length, 72);
    await waitFor(async () => (await count('SELECT count(*) AS n FROM turns')) === before + 72, 15_000);

    // Checked on requests sent one at a time after the burst: under a cold burst recall may run out
    // of its 100 ms and the request is answered without it (counted in /status), by design.
    // Worded unlike the burst, so that this checks scopes, not how recall leaves out the burst's 72
    // raw copies of one question (test/memory-parts.test.ts proves that).
    // A check whose recall still ran out of its budget (the nodes' background learning shares two
    // cores with three proxies and PostgreSQL) is asked again: what is checked is the full recall.
    const checked = new Map<string, string>();
    for (const [index, node] of nodes.entries())
      for (const member of MEMBERS) checked.set(`${member}-${index}`, await askWithFullRecall(node, member, `${member}-check-${index}`));
    const alice = sentFor(checked.get('alice-1')!);
    assert.match(alice, /Helix/, "Alice's own memory is recalled for her");
    assert.doesNotMatch(alice, /Emacs/, "Bob's memory never reaches Alice's request");
    assert.match(alice, /blue-harbor/, "the team scope's memory is recalled for every member");
    const bob = sentFor(checked.get('bob-2')!);
    assert.match(bob, /Emacs/);
    assert.doesNotMatch(bob, /Helix/);
    const carol = sentFor(checked.get('carol-0')!);
    assert.doesNotMatch(carol, /Helix|Emacs/, 'a member with no memories of their own gets none of the others');
    assert.match(carol, /blue-harbor/);
    assert.ok(
      !team.upstream
        .modelRequests()
        .some((request) => MEMBERS.some((member) => request.raw.includes(keys[member]) || JSON.stringify(request.headers).includes(keys[member]))),
    );

    const scopes = await team.pool.query<{ scope: string; turns: string }>(
      "SELECT s.scope, count(*) AS turns FROM turns t JOIN sessions s ON s.id = t.session_id WHERE t.query LIKE '[%' AND t.query NOT LIKE '[%-check-%' GROUP BY s.scope ORDER BY s.scope",
    );
    assert.deepEqual(
      scopes.rows.map((row) => [row.scope, Number(row.turns)]),
      MEMBERS.map((member) => [`user:${member}`, 24]),
    );
    assert.equal(
      await count('SELECT count(*) AS n FROM (SELECT session_id, seq FROM turns GROUP BY session_id, seq HAVING count(*) > 1) d'),
      0,
      'no two turns share a seq',
    );
  });

  test("a skill added to the team store reaches every node's next request within a second", async () => {
    const question = 'How should I tune Kubernetes pod disruption budgets for a rolling node drain?';
    await ask(nodes[0]!, 'alice', `[skill-before] ${question}`);
    assert.doesNotMatch(sentFor('[skill-before]'), /maxUnavailable/);
    const more = tempHome('metaclaw-team-more-');
    try {
      skillFile(
        join(more, 'skills'),
        'pod-disruption-budgets',
        'Kubernetes pod disruption budgets for a rolling node drain: minAvailable, maxUnavailable and eviction.',
        '# Pod disruption budgets\n\nSet maxUnavailable to 1 for stateful sets before draining nodes.',
      );
      openDatabase(join(more, 'metaclaw.db')).close(); // the personal database the import reads
      await cli(['store', 'import-sqlite', more, '--merge'], more);
      const imported = Date.now();
      // Every node is asked at once, again and again, until its answer holds the new skill.
      const delays = await Promise.all(
        nodes.map((node, index) =>
          waitFor(
            async () => {
              const marker = `[skill-${index}-${Date.now()}]`;
              await ask(node, 'bob', `${marker} ${question}`);
              return sentFor(marker).includes('maxUnavailable') ? { ms: Date.now() - imported } : undefined;
            },
            5_000,
            20,
          ),
        ),
      );
      const slowest = Math.max(...delays.map((delay) => delay.ms));
      assert.ok(slowest <= 1_000, `every node had the skill within a second of the import (slowest ${slowest} ms)`);
    } finally {
      rmSync(more, { recursive: true, force: true });
    }
  });

  test('a removed member is refused by every node within about a second, and a new member is served', async () => {
    await cli(['team', 'remove-member', 'carol']);
    for (const node of nodes) {
      await waitFor(async () => {
        const client = new OpenAI({ baseURL: `${node.url}/v1`, apiKey: keys.carol, maxRetries: 0 });
        return client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }).then(
          () => false,
          (error: unknown) => (error as { status?: number }).status === 401,
        );
      }, 3_000);
    }
    keys.carol = (JSON.parse(await cli(['team', 'add-member', 'carol', '--json'])) as { key: string }).key;
    for (const node of nodes)
      await waitFor(
        () =>
          ask(node, 'carol', 'hello again').then(
            () => true,
            () => false,
          ),
        3_000,
      );
  });

  test('PostgreSQL stopped for 30 s during traffic: every request is answered, /status, `metaclaw status` and `metaclaw doctor` say degraded, and every turn is stored with its learning job once it is back', async () => {
    const before = await count('SELECT count(*) AS n FROM turns');
    team.postgres.pause();
    let sent = 0;
    const failures: string[] = [];
    const until = Date.now() + 30_000;
    let sawDegraded = false;
    // Once /status says degraded, the operator's commands are run against a node while traffic goes on.
    let operatorViews: Promise<[CliResult, CliResult]> | undefined;
    while (Date.now() < until) {
      const round = nodes.flatMap((node, index) =>
        MEMBERS.map((member) =>
          ask(node, member, `[outage-${member}-${index}-${sent}] Which editor is my favourite?`).then(
            () => undefined,
            (error: unknown) => failures.push(String(error)),
          ),
        ),
      );
      sent += round.length;
      await Promise.all(round);
      if (!sawDegraded) {
        const status = await sendJson(`${nodes[0]!.url}/status`, 'GET', { headers: { authorization: `Bearer ${OWNER_KEY}` } });
        sawDegraded = status.body?.store?.degraded === true;
        if (sawDegraded) operatorViews = Promise.all([nodes[0]!.cli(['doctor', '--json', '--no-canary']), nodes[0]!.cli(['status'])]);
      }
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    assert.deepEqual(failures.slice(0, 3), [], 'every request was answered while the store was down');
    assert.ok(sawDegraded, '/status said the store was degraded');
    assert.equal((await fetch(`${nodes[1]!.url}/healthz`)).status, 200);
    const [doctor, shown] = await operatorViews!;
    const proxyCheck = (JSON.parse(doctor.stdout) as { checks: Array<{ name: string; verdict: string; detail: string }> }).checks.find(
      (check) => check.name === 'proxy',
    );
    assert.ok(proxyCheck, doctor.stdout);
    assert.equal(proxyCheck.verdict, 'warn', proxyCheck.detail);
    assert.match(proxyCheck.detail, /team store out of reach: serving goes on, \d+ turn\(s\) wait on this node/);
    assert.equal(shown.code, 0, shown.stderr);
    assert.match(shown.stdout, /store .*DEGRADED, out of reach/);
    team.postgres.resume();
    await waitFor(async () => (await count('SELECT count(*) AS n FROM turns').catch(() => -1)) >= before + sent, 30_000, 250).catch(async (error: unknown) => {
      const reports = await Promise.all(nodes.map((node) => sendJson(`${node.url}/status`, 'GET', { headers: { authorization: `Bearer ${OWNER_KEY}` } })));
      const stored = await count('SELECT count(*) AS n FROM turns').catch(() => -1);
      throw new Error(`${String(error)}: ${stored} of ${before + sent} turns stored; ${JSON.stringify(reports.map((report) => report.body?.store))}`);
    });
    assert.equal(await count("SELECT count(*) AS n FROM turns WHERE query LIKE '[outage-%'"), sent, 'each turn stored once');
    assert.equal(
      await count(
        "SELECT count(*) AS n FROM turns t JOIN jobs j ON j.kind = 'memory.record_turn' AND (j.payload::jsonb ->> 'turnId') = t.id WHERE t.query LIKE '[outage-%'",
      ),
      sent,
      'each turn stored after the outage queued its learning job, once',
    );
    const status = await waitFor(async () => {
      const report = await sendJson(`${nodes[2]!.url}/status`, 'GET', { headers: { authorization: `Bearer ${OWNER_KEY}` } });
      return report.body?.store?.degraded === false ? report.body : undefined;
    }, 10_000);
    assert.equal(status.store.engine, 'postgres');
    // The throwaway PostgreSQL has no pgvector: the node says recall is keyword-only, and why.
    assert.equal(status.store.search, 'keyword');
    assert.match(status.store.vectors, /^keyword-only recall: .*pgvector/);
    assert.equal(status.requests.errors.record_failures, 0, 'no turn record was refused: a lost connection is an outage, the turn waits');
    assert.ok(!JSON.stringify(status).includes(OWNER_KEY));
  });
  test('a node that starts with more journaled turns than it holds in memory (10,000) stores every one of them', async () => {
    // What a node left behind when it stopped during a long outage: 10,050 answered turns in its journal.
    const home = tempHome('metaclaw-team-journal-');
    const journal = new TurnJournal(join(home, 'journal'));
    const total = 10_050;
    for (let index = 0; index < total; index++)
      appendAnsweredTurn(journal, {
        id: `journal-turn-${index}`,
        sessionId: 'journal-session',
        turnType: 'side',
        sideRequest: 'title',
        query: `[journal-${index}] A title for this conversation, please.`,
        startedAt: Date.now() - 60_000 + index,
        reply: 'Title',
      });
    journal.close();
    nodes.push(await startProxy({ home, env: teamEnv(), config: { llm: { api_base: `${team.upstream.url}/v1`, api_key: 'upstream-key' } } }));
    await waitFor(async () => (await count("SELECT count(*) AS n FROM turns WHERE query LIKE '[journal-%'")) === total, 90_000, 500).catch(
      async (error: unknown) => {
        throw new Error(`${String(error)}: ${await count("SELECT count(*) AS n FROM turns WHERE query LIKE '[journal-%'")} of ${total} journaled turns stored`);
      },
    );
  });
});
