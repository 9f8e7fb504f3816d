import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import OpenAI from 'openai';
import { DEPLOY_SKILL, isEvolverCall, learningAwareUpstream, session } from './support/evolver.js';
import { startProxy, waitFor, type ProxyHandle } from './support/proxy.js';
import { ScriptedUpstream } from './support/upstream.js';

const KEY = 'proxy-key-for-the-jobs-test';

async function call(
  proxy: ProxyHandle,
  path: string,
  init: { method?: string; anonymous?: boolean; body?: unknown } = {},
): Promise<{ status: number; body: any }> {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (!init.anonymous) headers['authorization'] = `Bearer ${KEY}`;
  const response = await fetch(`${proxy.url}${path}`, {
    method: init.method ?? 'GET',
    headers,
    ...(init.body === undefined ? {} : { body: typeof init.body === 'string' ? init.body : JSON.stringify(init.body) }),
  });
  return { status: response.status, body: await response.json() };
}

/** The proxy line of `metaclaw doctor`. */
async function doctorCheck(proxy: ProxyHandle): Promise<{ verdict: string; detail: string; fix?: string }> {
  const doctor = JSON.parse((await proxy.cli(['doctor', '--json', '--no-canary'])).stdout) as {
    checks: Array<{ name: string; verdict: string; detail: string; fix?: string }>;
  };
  return doctor.checks.find((entry) => entry.name === 'proxy')!;
}

describe('failed learning jobs: listed with why, and sent back once the cause is fixed', () => {
  test('a skill evolution that failed for good is listed by `metaclaw jobs` with its error, `jobs retry --all-dead` runs it again to a new skill, and `jobs dismiss` deletes one given up on', async () => {
    const upstream = await ScriptedUpstream.start();
    let evolverBroken = true;
    upstream.defaultHandler = learningAwareUpstream({
      evolver: () => (evolverBroken ? 'Sorry, I cannot produce JSON today.' : JSON.stringify({ changes: [DEPLOY_SKILL] })),
      extractor: () => JSON.stringify({ memories: [] }),
    });
    const proxy = await startProxy({
      config: {
        proxy: { api_key: KEY },
        llm: { api_base: `${upstream.url}/v1`, api_key: 'k' },
        learning: { max_attempts: 1 },
        skills: { evolution_every_n_turns: 0 },
      },
    });
    try {
      const client = new OpenAI({ baseURL: `${proxy.url}/v1`, apiKey: KEY, maxRetries: 0 });
      await session(client, 'jobs-retry', ['How do I deploy the billing service?', 'No, with the blue-green script, and never on Fridays.']);
      await waitFor(async () => (await call(proxy, '/status')).body.queue.dead >= 1, 30_000);

      const listed = await proxy.cli(['jobs']);
      assert.equal(listed.code, 0, listed.stderr);
      assert.match(listed.stdout, /skills\.evolve \(sessionId jobs-retry.*\)\s+dead, attempt 1 of 1/);
      assert.match(listed.stdout, /the model's answer holds no JSON: Sorry, I cannot produce JSON today./, 'the error says why');
      assert.match(listed.stdout, /metaclaw jobs retry/);
      const json = await proxy.cli(['jobs', 'list', '--json']);
      const dead = (JSON.parse(json.stdout) as { data: Array<{ id: number; kind: string; status: string; error: string | null; payload: any }> }).data;
      assert.deepEqual(
        dead.map((job) => [job.kind, job.status, job.payload.sessionId]),
        [['skills.evolve', 'dead', 'jobs-retry']],
      );
      assert.ok(dead[0]!.error && dead[0]!.error.length > 0);
      // The job's own log lines, by its id: its failure with the reason, and nothing of any other job.
      assert.match(listed.stdout, /metaclaw logs --job ID/);
      const logged = await waitFor(async () => {
        const found = await proxy.cli(['logs', '--job', String(dead[0]!.id), '--json']);
        return found.stdout.includes('failed for good') ? found : undefined;
      }, 10_000);
      const jobLines = logged.stdout
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line) as { job: number; msg: string });
      assert.ok(jobLines.every((line) => line.job === dead[0]!.id));
      assert.ok(jobLines.some((line) => line.msg === 'learning job failed for good (dead-letter list)'));
      assert.equal(existsSync(join(proxy.home, 'skills', DEPLOY_SKILL.name, 'SKILL.md')), false);
      assert.match((await proxy.cli(['status'])).stdout, /learning {4}queue \d+ waiting, \d+ running, 1 dead \(see `metaclaw jobs`\)/);
      const check = await doctorCheck(proxy);
      assert.equal(check.verdict, 'warn');
      assert.match(check.detail, /1 learning job\(s\) failed for good/);
      assert.match(check.fix ?? '', /`metaclaw jobs` lists them with why.*`metaclaw jobs retry --all-dead`, or `metaclaw jobs dismiss --all-dead`/);

      // The same list over HTTP, behind the proxy key.
      const refused = await call(proxy, '/v1/learning/jobs', { anonymous: true });
      assert.equal(refused.status, 401);
      const overHttp = await call(proxy, '/v1/learning/jobs?kind=skills.evolve');
      assert.equal(overHttp.status, 200);
      assert.deepEqual(
        overHttp.body.data.map((job: { id: number }) => job.id),
        [dead[0]!.id],
      );
      const badStatus = await call(proxy, '/v1/learning/jobs?status=broken');
      assert.equal(badStatus.status, 400);
      assert.match(badStatus.body.error.message, /status: must be one of dead, queued, leased, done, all/);
      const badLimit = await call(proxy, '/v1/learning/jobs?limit=0');
      assert.equal(badLimit.status, 400);
      assert.match(badLimit.body.error.message, /limit: must be a whole number from 1 to 1000/);
      const done = (await call(proxy, '/v1/learning/jobs?status=done&limit=1')).body.data[0];
      const notDead = await call(proxy, `/v1/learning/jobs/${done.id}/retry`, { method: 'POST' });
      assert.equal(notDead.status, 409);
      assert.match(notDead.body.error.message, /is done: only a dead job can be retried/);
      assert.equal((await call(proxy, '/v1/learning/jobs/999999/retry', { method: 'POST' })).status, 404);
      const badBody = await call(proxy, '/v1/learning/jobs/retry', { method: 'POST', body: { ids: [] } });
      assert.equal(badBody.status, 400);
      assert.equal((await call(proxy, '/v1/learning/jobs/retry', { method: 'POST', anonymous: true, body: { all_dead: true } })).status, 401);
      assert.equal(dead.length, (await call(proxy, '/v1/learning/jobs')).body.data.length, 'refused calls changed nothing');

      // Mistakes on the command line change nothing either.
      const none = await proxy.cli(['jobs', 'retry']);
      assert.equal(none.code, 1);
      assert.match(none.stderr, /Give the ids of the jobs to retry/);
      const missing = await proxy.cli(['jobs', 'retry', '999999']);
      assert.equal(missing.code, 1);
      assert.match(missing.stdout, /job 999999: no such job/);

      evolverBroken = false;
      const evolverCalls = upstream.requests.filter(isEvolverCall).length;
      const retried = await proxy.cli(['jobs', 'retry', '--all-dead']);
      assert.equal(retried.code, 0, retried.stderr);
      assert.match(retried.stdout, new RegExp(`job ${dead[0]!.id}: queued again`));
      assert.match(retried.stdout, /1 of 1 job\(s\) queued again/);
      await waitFor(() => existsSync(join(proxy.home, 'skills', DEPLOY_SKILL.name, 'SKILL.md')), 20_000);
      assert.equal(upstream.requests.filter(isEvolverCall).length, evolverCalls + 1, 'one more evolver call');
      const after = JSON.parse((await proxy.cli(['jobs', 'list', '--status', 'all', '--kind', 'skills.evolve', '--json'])).stdout).data;
      assert.deepEqual(
        after.map((job: { id: number; status: string; error: string | null }) => [job.id, job.status, job.error]),
        [[dead[0]!.id, 'done', null]],
      );
      assert.match((await proxy.cli(['jobs'])).stdout, /^No dead learning jobs\.$/m);
      assert.equal((await doctorCheck(proxy)).verdict, 'pass', 'no dead job left: doctor stops warning');

      // A failure the user gives up on: dismissed, it leaves the list and doctor's warning.
      evolverBroken = true;
      await session(client, 'jobs-dismiss', ['How do I roll back the billing service?', 'No, switch the colors back instead.']);
      const second = await waitFor(async () => (await call(proxy, '/v1/learning/jobs')).body.data[0], 30_000);
      assert.equal(second.payload.sessionId, 'jobs-dismiss');
      const notDeadDelete = await call(proxy, `/v1/learning/jobs/${dead[0]!.id}`, { method: 'DELETE' });
      assert.equal(notDeadDelete.status, 409, 'the retried job is done, not dead');
      const dismissed = await proxy.cli(['jobs', 'dismiss', String(second.id)]);
      assert.equal(dismissed.code, 0, dismissed.stderr);
      assert.match(dismissed.stdout, new RegExp(`job ${second.id}: dismissed \\(deleted\\)`));
      assert.equal((await call(proxy, '/v1/learning/jobs?status=all&kind=skills.evolve')).body.data.length, 1, 'only the retried job is left');
      assert.equal((await doctorCheck(proxy)).verdict, 'pass');
    } finally {
      await proxy.dispose();
      await upstream.close();
    }
  });
});
