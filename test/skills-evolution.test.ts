import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import OpenAI from 'openai';
import { parse as parseYaml } from 'yaml';
import { DEPLOY_SKILL, isEvolverCall, learningAwareUpstream, session, status, statusWhen, userText } from './support/evolver.js';
import { recordedTurn, runCli, startProxy, tempHome, waitFor } from './support/proxy.js';
import { GITHUB_TOKEN } from './support/secrets.js';
import { errorReply, ScriptedUpstream, type Handler } from './support/upstream.js';

describe('skills evolve from sessions', () => {
  test('session → session end → evolver call → new SKILL.md → generation bumped → injected in the next session', async () => {
    const upstream = await ScriptedUpstream.start();
    upstream.defaultHandler = learningAwareUpstream({
      evolver: () => JSON.stringify({ changes: [DEPLOY_SKILL] }),
      chat: 'Run kubectl apply on the billing manifests.',
    });
    const home = tempHome();
    await runCli(['skills', 'install-starter'], { home });
    const proxy = await startProxy({
      home,
      config: { memory: { enabled: false }, llm: { api_base: `${upstream.url}/v1`, api_key: 'k' }, skills: { evolution_every_n_turns: 0 } },
    });
    try {
      const client = new OpenAI({ baseURL: `${proxy.url}/v1`, apiKey: 'x', maxRetries: 0 });
      const generationBefore = (await status(proxy)).skills.generation;
      await session(client, 'deploy-session', [
        'How do I deploy the billing service?',
        'No, I meant with the blue-green script, and never deploy on Fridays.',
        'Thanks, that is all.',
      ]);

      const file = join(home, 'skills', 'blue-green-deploys', 'SKILL.md');
      await waitFor(() => existsSync(file), 20_000);
      const text = readFileSync(file, 'utf8');
      const front = parseYaml(text.split('---')[1]!) as Record<string, unknown>;
      assert.equal(front['name'], 'blue-green-deploys');
      assert.equal(front['origin'], 'evolved');
      assert.deepEqual(front['source_sessions'], ['deploy-session']);
      assert.match(text, /Never deploy on Fridays/);

      const report = await waitFor(async () => {
        const current = await status(proxy);
        return current.queue.done >= 1 ? current : undefined;
      });
      assert.equal(report.skills.generation, generationBefore + 1);
      assert.ok(report.learning.spend.tokens_today >= 1200, 'the evolver call was counted as learning spend');

      const evolverCall = upstream.modelRequests().find(isEvolverCall)!;
      const prompt = userText(evolverCall);
      assert.match(prompt, /never deploy on Fridays/);
      assert.match(prompt, /the user corrected this answer/);
      assert.equal(prompt.includes('SECRET-SYSTEM-MARKER'), false, "the agent's system prompt is not sent to the evolver");
      assert.equal(prompt.includes('<metaclaw-context>'), false, 'injected context is not sent to the evolver');

      const history = readFileSync(join(home, 'skills', 'evolution_history.jsonl'), 'utf8')
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line));
      assert.equal(history.at(-1).session_id, 'deploy-session');
      assert.equal(history.at(-1).changes[0].name, 'blue-green-deploys');

      upstream.reset();
      await client.chat.completions.create(
        { model: 'scripted-model', messages: [{ role: 'user', content: 'deploy the billing service to production please' }] },
        { headers: { 'X-Session-Id': 'next-session' } },
      );
      const injected = upstream.modelRequests()[0]!.body.messages[0].content as string;
      assert.match(injected, /### blue-green-deploys/);
      assert.match(injected, /Never deploy on Fridays/);

      const log = await proxy.cli(['skills', 'log', '--full']);
      assert.match(log.stdout, /create blue-green-deploys: applied/);
      assert.match(log.stdout, /evidence: turn 2/);
    } finally {
      await proxy.dispose();
      await upstream.close();
    }
  });

  test('a secret from the session never reaches an evolved skill: SKILL.md and the evolution history hold a marker instead', async () => {
    const leaky = {
      ...DEPLOY_SKILL,
      body: `${DEPLOY_SKILL.body}\n\n**Auth**\nexport GITHUB_TOKEN=${GITHUB_TOKEN} before running the script.`,
      evidence: [`turn 1: the user pasted ${GITHUB_TOKEN}`],
    };
    const upstream = await ScriptedUpstream.start();
    upstream.defaultHandler = learningAwareUpstream({ evolver: () => JSON.stringify({ changes: [leaky] }) });
    const home = tempHome();
    const proxy = await startProxy({
      home,
      config: { memory: { enabled: false }, llm: { api_base: `${upstream.url}/v1`, api_key: 'k' }, skills: { evolution_every_n_turns: 0 } },
    });
    try {
      const client = new OpenAI({ baseURL: `${proxy.url}/v1`, apiKey: 'x', maxRetries: 0 });
      await session(client, 'leaky-session', ['How do I deploy the billing service?', 'Use the blue-green script.']);
      const file = join(home, 'skills', 'blue-green-deploys', 'SKILL.md');
      await waitFor(() => existsSync(file), 20_000);
      const text = readFileSync(file, 'utf8');
      assert.match(text, /export GITHUB_TOKEN=\[redacted github-token\] before running the script\./);
      assert.equal(text.includes(GITHUB_TOKEN), false);
      const history = await waitFor(
        () => existsSync(join(home, 'skills', 'evolution_history.jsonl')) && readFileSync(join(home, 'skills', 'evolution_history.jsonl'), 'utf8'),
      );
      assert.match(history, /the user pasted \[redacted github-token\]/);
      assert.equal(history.includes(GITHUB_TOKEN), false);
    } finally {
      await proxy.dispose();
      await upstream.close();
    }
  });

  test('malformed evolver output writes nothing, is retried, then dead-lettered', async () => {
    const upstream = await ScriptedUpstream.start();
    upstream.defaultHandler = learningAwareUpstream({ evolver: () => 'I think a skill about deploys would help, something like blue-green.' });
    const home = tempHome();
    const proxy = await startProxy({
      home,
      // No search keys job: it would meet the limit or run before it, and the queue's count is what is checked.
      config: {
        memory: { enabled: false },
        skills: { search_keys: false },
        llm: { api_base: `${upstream.url}/v1`, api_key: 'k' },
        learning: { max_attempts: 2 },
      },
    });
    try {
      const client = new OpenAI({ baseURL: `${proxy.url}/v1`, apiKey: 'x', maxRetries: 0 });
      await session(client, 'bad-output-session', ['How do I deploy?', 'No, never on Fridays.']);
      const report = await statusWhen(proxy, (report) => report.queue.dead >= 1, 30_000);
      assert.equal(upstream.modelRequests().filter(isEvolverCall).length, 2, 'tried twice');
      assert.equal(report.learning.failed, 2);
      assert.match(report.learning.last_errors[0].error, /holds no JSON/);
      assert.equal(report.skills.count, 0, 'nothing was written');
      assert.equal(report.skills.generation, 0);
      // the log is written in batches, at least every half second
      await waitFor(() => /the evolver returned unusable output; nothing written/.test(readFileSync(join(home, 'logs', 'metaclaw.log'), 'utf8')), 5_000, 100);
    } finally {
      await proxy.dispose();
      await upstream.close();
    }
  });

  test("a learning LLM that refuses the key pauses learning with the reason instead of burning every job's attempts", async () => {
    const upstream = await ScriptedUpstream.start();
    upstream.defaultHandler = learningAwareUpstream({
      evolver: () => errorReply(401, { error: { message: 'Incorrect API key provided', type: 'invalid_request_error', code: 'invalid_api_key' } }),
    });
    const proxy = await startProxy({
      config: { memory: { enabled: false }, llm: { api_base: `${upstream.url}/v1`, api_key: 'k' }, learning: { max_attempts: 3 } },
    });
    try {
      const client = new OpenAI({ baseURL: `${proxy.url}/v1`, apiKey: 'x', maxRetries: 0 });
      await session(client, 'refused-key-session', ['How do I deploy?', 'No, never on Fridays.']);
      const report = await statusWhen(proxy, (report) => report.learning.paused_reason, 20_000);
      assert.match(report.learning.paused_reason, /cannot be used as configured .*401/);
      assert.equal(upstream.modelRequests().filter(isEvolverCall).length, 1, 'one call found out; the others wait');
      assert.equal(report.queue.dead, 0, 'nothing was dead-lettered');
      assert.ok(report.queue.queued >= 1, 'the job waits in the queue');
      assert.equal(report.learning.failed, 0, 'the job lost no attempt');
    } finally {
      await proxy.dispose();
      await upstream.close();
    }
  });

  test('a learning LLM that echoes the refused key: the reason in /status and the log holds its words without the key', async () => {
    const key = 'sk-learning-key-echoed-0123456789';
    const upstream = await ScriptedUpstream.start();
    upstream.defaultHandler = learningAwareUpstream({
      evolver: (request) =>
        errorReply(401, {
          error: { message: `Incorrect API key provided: ${String(request.headers['authorization']).slice('Bearer '.length)}`, type: 'invalid_request_error' },
        }),
    });
    const proxy = await startProxy({ config: { memory: { enabled: false }, llm: { api_base: `${upstream.url}/v1`, api_key: key } } });
    try {
      const client = new OpenAI({ baseURL: `${proxy.url}/v1`, apiKey: 'x', maxRetries: 0 });
      await session(client, 'echoed-key-session', ['How do I deploy?', 'No, never on Fridays.']);
      const report = await statusWhen(proxy, (report) => report.learning.paused_reason, 20_000);
      assert.match(report.learning.paused_reason, /Incorrect API key provided: \[redacted\]/);
      const log = join(proxy.home, 'logs', 'metaclaw.log');
      await waitFor(() => /Incorrect API key provided/.test(readFileSync(log, 'utf8')), 5_000, 100);
      assert.equal(readFileSync(log, 'utf8').includes(key), false, 'the key is not in the log');
      assert.equal(JSON.stringify(report).includes(key), false, 'nor in /status');
    } finally {
      await proxy.dispose();
      await upstream.close();
    }
  });

  test('a learning LLM rate limit with retry-after pauses learning that long instead of every job asking again and burning its attempts', async () => {
    const upstream = await ScriptedUpstream.start();
    upstream.defaultHandler = learningAwareUpstream({
      evolver: () => errorReply(429, { error: { message: 'Rate limit reached', type: 'rate_limit_error' } }, { 'retry-after': '3600' }),
    });
    const proxy = await startProxy({
      // No search keys job: it would meet the limit or run before it, and the queue's count is what is checked.
      config: {
        memory: { enabled: false },
        skills: { search_keys: false },
        llm: { api_base: `${upstream.url}/v1`, api_key: 'k' },
        learning: { max_attempts: 2 },
      },
    });
    try {
      const client = new OpenAI({ baseURL: `${proxy.url}/v1`, apiKey: 'x', maxRetries: 0 });
      await session(client, 'limited-session-1', ['How do I deploy?', 'No, never on Fridays.']);
      await session(client, 'limited-session-2', ['How do I roll back?', 'No, with the script.']);
      const report = await statusWhen(proxy, (report) => report.learning.paused_reason && report.queue.queued >= 2, 20_000);
      assert.match(report.learning.paused_reason, /rate limited .*429.*wait until/);
      const until = Date.parse(/wait until (\S+)$/.exec(report.learning.paused_reason)![1]!);
      assert.ok(until - Date.now() > 3_500_000, 'it waits the hour the upstream asked for');
      // Past the first retry's backoff (5 s): a runner that ignored retry-after would have asked again by now.
      await new Promise((resolve) => setTimeout(resolve, 6_500));
      const later = await status(proxy);
      assert.equal(upstream.modelRequests().filter(isEvolverCall).length, 1, 'one call met the limit; the other jobs wait');
      assert.equal(later.learning.failed, 1, 'the failure is counted');
      assert.match(later.learning.last_errors[0].error, /answered 429/);
      assert.equal(later.queue.dead, 0, 'nothing was dead-lettered');
      assert.equal(later.queue.queued, 2, 'both jobs wait in the queue');
    } finally {
      await proxy.dispose();
      await upstream.close();
    }
  });

  test('a learning answer that never ends is cut at 8 MB and the job retried, while the proxy keeps serving', async () => {
    const upstream = await ScriptedUpstream.start();
    const chunk = Buffer.alloc(1 << 20, ' ');
    const endless: Handler = (_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json' });
      response.write('{"choices":[{"message":{"content":"');
      let open = true;
      response.on('close', () => (open = false));
      const pump = () => {
        while (open && response.write(chunk));
      };
      response.on('drain', pump);
      pump();
    };
    upstream.defaultHandler = learningAwareUpstream({ chat: 'Still here.', evolver: () => endless });
    const proxy = await startProxy({
      config: { memory: { enabled: false }, llm: { api_base: `${upstream.url}/v1`, api_key: 'k' }, learning: { max_attempts: 3 } },
    });
    try {
      const client = new OpenAI({ baseURL: `${proxy.url}/v1`, apiKey: 'x', maxRetries: 0 });
      await session(client, 'endless-answer-session', ['How do I deploy?', 'No, never on Fridays.']);
      const report = await statusWhen(proxy, (report) => report.learning.failed >= 1, 20_000);
      assert.match(report.learning.last_errors[0].error, /answered more than 8 MB; the answer was dropped/);
      assert.equal(report.queue.dead, 0, 'retried, not dead-lettered at the first cut');
      const answer = await client.chat.completions.create({ model: 'scripted-model', messages: [{ role: 'user', content: 'still there?' }] });
      assert.equal(answer.choices[0]!.message.content, 'Still here.');
    } finally {
      await proxy.dispose();
      await upstream.close();
    }
  });

  test('two sessions ending at once: both changes land, no lost update, no half-written file', async () => {
    const upstream = await ScriptedUpstream.start();
    let calls = 0;
    upstream.defaultHandler = learningAwareUpstream({
      delayMs: 400,
      evolver: (request) => {
        calls++;
        const marker = userText(request).includes('session-a') ? 'MARKER-FROM-A' : 'MARKER-FROM-B';
        const extra =
          marker === 'MARKER-FROM-B'
            ? [
                {
                  ...DEPLOY_SKILL,
                  name: 'release-notes',
                  description: 'Use when writing release notes for a deploy: what changed, risks, rollback.',
                  body: '# Release notes\n\n**Steps**\n1. **List user-visible changes.** One line each.\n2. **Name the risks.** And the rollback.',
                },
              ]
            : [];
        return JSON.stringify({
          changes: [
            {
              action: 'update',
              name: 'git-commit-hygiene',
              description: 'Use when committing or cleaning up git history before merge.',
              body: `# Focused Git Commits\n\n**Steps**\n1. **Commit small.** One change per commit.\n2. **${marker}.** Learned in this session.`,
              evidence: [`${marker} evidence`],
            },
            ...extra,
          ],
        });
      },
    });
    const home = tempHome();
    await runCli(['skills', 'install-starter'], { home });
    const proxy = await startProxy({
      home,
      config: {
        memory: { enabled: false },
        llm: { api_base: `${upstream.url}/v1`, api_key: 'k' },
        learning: { concurrency: 2 },
        skills: { evolution_every_n_turns: 0 },
      },
    });
    try {
      const client = new OpenAI({ baseURL: `${proxy.url}/v1`, apiKey: 'x', maxRetries: 0 });
      const before = (await status(proxy)).skills.generation;
      await Promise.all([
        session(client, 'session-a', ['squash my git commits session-a', 'no, keep the merge commit session-a']),
        session(client, 'session-b', ['squash my git commits session-b', 'no, rebase instead session-b']),
      ]);
      await waitFor(async () => (await status(proxy)).queue.done >= 2, 30_000, 200);
      assert.equal(calls, 2);
      const text = readFileSync(join(home, 'skills', 'git-commit-hygiene', 'SKILL.md'), 'utf8');
      assert.match(text, /MARKER-FROM-A/);
      assert.match(text, /MARKER-FROM-B/, 'the second update was merged, not written over the first');
      const front = parseYaml(text.split('---')[1]!) as { version: number };
      assert.equal(front.version, 3, 'starter v1, then one version per session');
      assert.ok(existsSync(join(home, 'skills', 'release-notes', 'SKILL.md')));
      const report = await status(proxy);
      assert.equal(report.skills.invalid_files.length, 0);
      assert.equal(report.skills.generation, before + 3);
      const doctor = await proxy.cli(['skills', 'doctor']);
      assert.equal(doctor.code, 0, doctor.stdout);

      const diff = await proxy.cli(['skills', 'diff', 'git-commit-hygiene']);
      assert.match(diff.stdout, /^\+.*MARKER-FROM-/m);
      const reverted = await proxy.cli(['skills', 'revert', 'git-commit-hygiene']);
      assert.equal(reverted.code, 0, reverted.stderr);
      assert.match(reverted.stdout, /now v4/);
      const afterRevert = readFileSync(join(home, 'skills', 'git-commit-hygiene', 'SKILL.md'), 'utf8');
      assert.equal((afterRevert.match(/MARKER-FROM-/g) ?? []).length, 1, 'back to the version before the last change');
    } finally {
      await proxy.dispose();
      await upstream.close();
    }
  });

  test('with skills.review: manual, proposals wait until approved or rejected, and skills log says pending until the decision, then the decision', async () => {
    const upstream = await ScriptedUpstream.start();
    upstream.defaultHandler = learningAwareUpstream({ evolver: () => JSON.stringify({ changes: [DEPLOY_SKILL] }) });
    const home = tempHome();
    const proxy = await startProxy({
      home,
      config: { memory: { enabled: false }, llm: { api_base: `${upstream.url}/v1`, api_key: 'k' }, skills: { review: 'manual' } },
    });
    try {
      const client = new OpenAI({ baseURL: `${proxy.url}/v1`, apiKey: 'x', maxRetries: 0 });
      await session(client, 'review-session', ['How do I deploy?', 'No, never on Fridays.']);
      await waitFor(async () => (await status(proxy)).skills.pending_proposals === 1, 20_000, 200);
      assert.equal(existsSync(join(home, 'skills', 'blue-green-deploys')), false, 'nothing written before review');
      const pending = await proxy.cli(['skills', 'pending']);
      assert.match(pending.stdout, /#1 {2}create blue-green-deploys/);
      // metaclaw status says a proposal waits, and that a hand-broken file is skipped.
      mkdirSync(join(home, 'skills', 'broken-one'));
      writeFileSync(join(home, 'skills', 'broken-one', 'SKILL.md'), '---\nname: broken-one\ndescription: [oops\n---\n\nbody\n');
      await waitFor(async () => (await status(proxy)).skills.invalid_files.length === 1, 20_000, 200);
      const statusText = await proxy.cli(['status']);
      assert.match(
        statusText.stdout,
        /^ {2}skills {6}0 skills \(generation 0\); 1 proposal waiting for review \(metaclaw skills pending\); 1 invalid file skipped \(metaclaw skills doctor\)$/m,
      );
      assert.match(pending.stdout, /evidence: turn 2/);
      assert.match((await proxy.cli(['skills', 'log'])).stdout, /^ {2}create blue-green-deploys: pending #1$/m);
      const approved = await proxy.cli(['skills', 'approve', '1']);
      assert.equal(approved.code, 0, approved.stderr);
      assert.match(approved.stdout, /Applied #1: create blue-green-deploys v1 \(generation 1\)/);
      assert.ok(existsSync(join(home, 'skills', 'blue-green-deploys', 'SKILL.md')));
      assert.match((await proxy.cli(['skills', 'log'])).stdout, /^ {2}create blue-green-deploys: approved \d{4}-\d\d-\d\d \d\d:\d\d UTC \(proposal #1\)$/m);
      const [logged] = JSON.parse((await proxy.cli(['skills', 'log', '--json'])).stdout) as Array<{
        changes: Array<{ status: string; decision?: { status: string } }>;
      }>;
      assert.deepEqual(
        logged!.changes.map((change) => [change.status, change.decision?.status]),
        [['pending #1', 'approved']],
        'the logged line stays as written; the decision is beside it',
      );
      const again = await proxy.cli(['skills', 'reject', '1']);
      assert.equal(again.code, 1);
      assert.match(again.stderr, /no pending proposal #1/);
    } finally {
      await proxy.dispose();
      await upstream.close();
    }
  });

  test('approving a proposal for a skill edited after it was proposed merges it into the edit, never writes over it', async () => {
    const upstream = await ScriptedUpstream.start();
    upstream.defaultHandler = learningAwareUpstream({ evolver: () => JSON.stringify({ changes: [{ ...DEPLOY_SKILL, action: 'update' }] }) });
    const home = tempHome();
    const folder = join(tempHome('skill-file-'), 'blue-green-deploys');
    mkdirSync(folder, { recursive: true });
    const file = join(folder, 'SKILL.md');
    const mine = (extra: string) =>
      `---\nname: blue-green-deploys\ndescription: Use when deploying a service to production with a blue-green switch.\n---\n\n# Deploys\n\n1. **Switch traffic.** Run the switch script.${extra}\n`;
    writeFileSync(file, mine(''));
    assert.equal((await runCli(['skills', 'add', file], { home })).code, 0);
    const proxy = await startProxy({
      home,
      config: { memory: { enabled: false }, llm: { api_base: `${upstream.url}/v1`, api_key: 'k' }, skills: { review: 'manual' } },
    });
    try {
      const client = new OpenAI({ baseURL: `${proxy.url}/v1`, apiKey: 'x', maxRetries: 0 });
      await session(client, 'review-session', ['How do I deploy the billing service?', 'No, never on Fridays.']);
      await waitFor(async () => (await status(proxy)).skills.pending_proposals === 1, 20_000, 200);
      // The person edits the skill while the proposal waits.
      writeFileSync(file, mine('\n2. **Page the on-call first.** They must know before traffic moves.'));
      const edited = await proxy.cli(['skills', 'add', file, '--overwrite']);
      assert.match(edited.stdout, /blue-green-deploys v2/);

      const approved = await proxy.cli(['skills', 'approve', '1']);
      assert.equal(approved.code, 0, approved.stderr);
      assert.match(
        approved.stdout,
        /Applied #1: blue-green-deploys changed after it was proposed \(now v2\), so its new lines were merged into that version: v3/,
      );
      const text = readFileSync(join(home, 'skills', 'blue-green-deploys', 'SKILL.md'), 'utf8');
      assert.match(text, /Page the on-call first/, "the person's edit is kept");
      assert.match(text, /Never deploy on Fridays/, 'what the proposal adds is there');
      assert.match(text, /^description: Use when deploying a service to production with a blue-green switch\.$/m);
    } finally {
      await proxy.dispose();
      await upstream.close();
    }
  });

  test('skills.auto_evolve: false learns nothing', async () => {
    const upstream = await ScriptedUpstream.start();
    upstream.defaultHandler = learningAwareUpstream({ evolver: () => JSON.stringify({ changes: [DEPLOY_SKILL] }) });
    const proxy = await startProxy({
      // search_keys off too: the keys job (its own switch) would be queued by the second English request.
      config: { memory: { enabled: false }, llm: { api_base: `${upstream.url}/v1`, api_key: 'k' }, skills: { auto_evolve: false, search_keys: false } },
    });
    try {
      const client = new OpenAI({ baseURL: `${proxy.url}/v1`, apiKey: 'x', maxRetries: 0 });
      const last = await session(client, 'off-session', ['How do I deploy?', 'No, never on Fridays.']);
      // The last turn ends the session; what ending it triggers is queued in the same write as its
      // record. Once that record is written, an evolution would be in the queue.
      await recordedTurn(proxy.url, last);
      const queue = (await status(proxy)).queue as Record<string, number>;
      assert.deepEqual(queue, { queued: 0, leased: 0, done: 0, dead: 0 }, 'no learning job was queued, run or given up');
      assert.equal(upstream.modelRequests().filter(isEvolverCall).length, 0);
    } finally {
      await proxy.dispose();
      await upstream.close();
    }
  });
});
