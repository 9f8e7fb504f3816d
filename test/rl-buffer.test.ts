import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { describe, test } from 'node:test';
import OpenAI from 'openai';
import { stringify } from 'yaml';
import { z } from 'zod';
import { DEPLOY_SKILL, isJudgeCall, learningAwareUpstream, session, status, userText } from './support/evolver.js';
import { cleanEnv, CLI, freePort, homeWithStarterSkills, runCli, startProxy, tempHome, waitFor, type ProxyHandle } from './support/proxy.js';
import { errorReply, ScriptedUpstream, type RecordedRequest } from './support/upstream.js';

const GIT_QUESTION = 'my git commit history is a mess, how do I squash commits before merging?';
const HAIKU = 'Write a haiku about autumn leaves.';

/** What the judge was shown as the instruction (the user's request of the judged turn). */
function judgedInstruction(request: RecordedRequest): string {
  return /Instruction:\n<<<\n([\s\S]*?)\n>>>/.exec(userText(request))?.[1] ?? '';
}

function judgedResponse(request: RecordedRequest): string {
  return /Response:\n<<<\n([\s\S]*?)\n>>>/.exec(userText(request))?.[1] ?? '';
}

function nextMessage(request: RecordedRequest): string {
  return /The user's next message:\n<<<\n([\s\S]*?)\n>>>/.exec(userText(request))?.[1] ?? '';
}

async function rlStatus(proxy: ProxyHandle): Promise<any> {
  const result = await proxy.cli(['rl', 'status', '--json']);
  assert.equal(result.code, 0, result.stderr);
  return JSON.parse(result.stdout);
}

/** Runs `rl export` and returns its lines parsed, each checked against `schema`. */
async function exported<T>(proxy: ProxyHandle, format: string, schema: z.ZodType<T>, extra: string[] = []): Promise<{ lines: T[]; stderr: string }> {
  const out = join(proxy.home, `export-${format}.jsonl`);
  const result = await proxy.cli(['rl', 'export', '--format', format, '--out', out, ...extra]);
  assert.equal(result.code, 0, result.stderr);
  const text = readFileSync(out, 'utf8');
  const lines = text === '' ? [] : text.trimEnd().split('\n');
  return { lines: lines.map((line) => schema.parse(JSON.parse(line))), stderr: result.stderr };
}

const message = z.object({ role: z.string(), content: z.unknown() }).loose();
const assistant = z.object({ role: z.literal('assistant'), content: z.string() }).loose();
const sftLine = z.object({ messages: z.array(message).min(2), turn_id: z.string() }).strict();
const ktoLine = z.object({ prompt: z.array(message).min(1), completion: z.array(assistant).length(1), label: z.boolean(), turn_id: z.string() }).strict();
const dpoLine = z.object({ prompt: z.array(message).min(1), chosen: z.array(assistant).length(1), rejected: z.array(assistant).length(1) }).strict();

const BASE = { memory: { enabled: false }, skills: { auto_evolve: false } };

describe('RL: the judge scores main turns, the buffer keeps them, export writes them', () => {
  test('a turn followed by the next user turn is judged with 3 votes and the majority is its reward; session end judges the last turn; skill credit gets the score', async () => {
    const votesFor = new Map<string, string[]>([
      [GIT_QUESTION, ['The answer fits. Score: 1', 'Helpful overall.\n**Score:** 1', 'Misses the force-push warning. Score: -1']],
      ['Thanks, that worked.', ['Score: 0', 'Score: 0', 'Score: 0']],
    ]);
    const upstream = await ScriptedUpstream.start();
    upstream.defaultHandler = learningAwareUpstream({
      chat: 'Use git rebase -i and mark the commits as squash.',
      judge: (request) => votesFor.get(judgedInstruction(request))!.shift()!,
    });
    const home = await homeWithStarterSkills();
    const proxy = await startProxy({ home, config: { ...BASE, mode: 'rl', llm: { api_base: `${upstream.url}/v1`, api_key: 'k' } } });
    try {
      const client = new OpenAI({ baseURL: `${proxy.url}/v1`, apiKey: 'x', maxRetries: 0 });
      await session(client, 'judged-session', [GIT_QUESTION, 'Thanks, that worked.']);
      const report = await waitFor(
        async () => {
          const current = await rlStatus(proxy);
          return current.buffer.by_state.scored === 2 ? current : undefined;
        },
        20_000,
        250,
      );
      assert.equal(report.mode.configured, 'rl');
      assert.equal(report.mode.effective, 'skills_only', 'no training key: runs as skills_only');
      assert.equal(report.recording, true);
      assert.equal(report.judge.votes, 3);
      assert.match(report.judge.endpoint, /main upstream/);
      assert.equal(report.buffer.samples, 2);
      assert.equal(report.buffer.text_only, 2, 'served by the normal upstream: no token ids');
      assert.equal(report.buffer.trainable, 0);
      assert.equal(report.buffer.judged_share, 1);
      assert.equal(report.buffer.mean_reward, 0.5, 'rewards 1 (two votes of three) and 0');

      const judgeCalls = upstream.requests.filter(isJudgeCall);
      assert.equal(judgeCalls.length, 6, 'three votes per turn');
      const first = judgeCalls.filter((request) => judgedInstruction(request) === GIT_QUESTION);
      assert.equal(first.length, 3);
      for (const call of first) {
        assert.equal(nextMessage(call), 'Thanks, that worked.', 'the judge sees the next state');
        assert.equal(judgedResponse(call), 'Use git rebase -i and mark the commits as squash.');
        assert.equal(call.body.temperature, 0.6);
      }
      const last = judgeCalls.filter((request) => judgedInstruction(request) === 'Thanks, that worked.');
      assert.match(nextMessage(last[0]!), /the session ended/);

      const kto = await exported(proxy, 'kto', ktoLine);
      assert.equal(kto.lines.length, 1, 'the neutral turn is left out');
      assert.equal(kto.lines[0]!.label, true);
      assert.equal(kto.lines[0]!.prompt.at(-1)!.content, GIT_QUESTION);
      assert.match(kto.stderr, /1 neutral/);

      const skills = JSON.parse((await proxy.cli(['skills', 'list', '--json'])).stdout) as Array<{
        name: string;
        credit: { judged: number; judge_mean: number } | null;
      }>;
      const credited = skills.find((skill) => skill.name === 'git-commit-hygiene')!;
      assert.equal(credited.credit!.judged, 1, 'the judge score reached the credit of the skill shown in that turn');
      assert.equal(credited.credit!.judge_mean, 1);
      assert.ok((await status(proxy)).learning.spend.by_kind_today['rl.judge'] > 0, "the judge's tokens count as learning spend");
    } finally {
      await proxy.dispose();
      await upstream.close();
    }
  });

  test('votes that split with no majority store no reward (a tie), not a fake score', async () => {
    const answers = ['Score: 1', 'Score: -1'];
    const upstream = await ScriptedUpstream.start();
    upstream.defaultHandler = learningAwareUpstream({ chat: 'Here you go.', judge: () => answers.shift() ?? 'Score: 0' });
    const proxy = await startProxy({
      config: { ...BASE, mode: 'skills_only', rl: { enabled: true, prm_m: 2 }, llm: { api_base: `${upstream.url}/v1`, api_key: 'k' } },
    });
    try {
      const client = new OpenAI({ baseURL: `${proxy.url}/v1`, apiKey: 'x', maxRetries: 0 });
      await session(client, 'tie-session', [HAIKU]);
      const report = await waitFor(
        async () => {
          const current = await rlStatus(proxy);
          return current.buffer.by_state.tie === 1 ? current : undefined;
        },
        20_000,
        250,
      );
      assert.equal(report.mode.effective, 'skills_only');
      assert.equal(report.buffer.by_state.scored, 0);
      assert.equal(report.buffer.mean_reward, null);
      assert.equal(report.buffer.judged_share, 0);
      assert.equal(upstream.requests.filter(isJudgeCall).length, 2);
      const kto = await exported(proxy, 'kto', ktoLine);
      assert.equal(kto.lines.length, 0, 'a tie is not exported');
    } finally {
      await proxy.dispose();
      await upstream.close();
    }
  });

  test('a judge outage leaves the reward empty while every agent request still succeeds', async () => {
    const upstream = await ScriptedUpstream.start();
    upstream.defaultHandler = learningAwareUpstream({ chat: 'Answer.', judge: () => errorReply(503, { error: { message: 'judge overloaded' } }) });
    const proxy = await startProxy({
      config: { ...BASE, mode: 'auto', learning: { max_attempts: 1 }, llm: { api_base: `${upstream.url}/v1`, api_key: 'k' } },
    });
    try {
      const client = new OpenAI({ baseURL: `${proxy.url}/v1`, apiKey: 'x', maxRetries: 0 });
      await session(client, 'outage-session', [HAIKU, 'Another one, about snow.', 'Thanks.']);
      const report = await waitFor(
        async () => {
          const current = await rlStatus(proxy);
          return current.buffer.by_state.failed === 3 ? current : undefined;
        },
        20_000,
        250,
      );
      assert.equal(report.buffer.by_state.scored, 0);
      assert.equal(report.buffer.mean_reward, null);
      const proxyStatus = await status(proxy);
      assert.equal(proxyStatus.requests.errors.upstream ?? 0, 0, 'the agent saw no error');
      assert.match(proxyStatus.learning.last_errors[0].error, /503/);
      assert.equal(proxyStatus.rl.buffer.by_state.failed, 3, '/status shows the buffer too');
    } finally {
      await proxy.dispose();
      await upstream.close();
    }
  });

  test('scored samples export as SFT (good answers), KTO (labels) and DPO (good/bad pairs for the same prompt) lines that validate; datum needs token ids', async () => {
    let haikus = 0;
    const upstream = await ScriptedUpstream.start();
    upstream.defaultHandler = learningAwareUpstream({
      chat: (request) =>
        userText(request) === HAIKU ? (haikus++ % 2 === 0 ? 'GOOD: Red leaves drift and fall' : 'BAD: I cannot write poems.') : 'You are welcome.',
      judge: (request) => (judgedResponse(request).startsWith('GOOD') ? 'Score: 1' : judgedResponse(request).startsWith('BAD') ? 'Score: -1' : 'Score: 0'),
    });
    const proxy = await startProxy({ config: { ...BASE, mode: 'rl', llm: { api_base: `${upstream.url}/v1`, api_key: 'k' } } });
    try {
      const client = new OpenAI({ baseURL: `${proxy.url}/v1`, apiKey: 'x', maxRetries: 0 });
      await session(client, 'pair-a', [HAIKU, 'Thanks.'], 'You are a poet.');
      await session(client, 'pair-b', [HAIKU, 'Thanks.'], 'You are a poet.');
      await waitFor(async () => (await rlStatus(proxy)).buffer.by_state.scored === 4, 20_000);

      const sft = await exported(proxy, 'sft', sftLine);
      assert.equal(sft.lines.length, 1);
      assert.deepEqual(
        sft.lines[0]!.messages.map((entry) => entry.role),
        ['system', 'user', 'assistant'],
      );
      assert.match(String(sft.lines[0]!.messages[0]!.content), /^You are a poet\./);
      assert.equal(sft.lines[0]!.messages[2]!.content, 'GOOD: Red leaves drift and fall');

      const kto = await exported(proxy, 'kto', ktoLine);
      assert.deepEqual(kto.lines.map((line) => [line.completion[0]!.content, line.label]).sort(), [
        ['BAD: I cannot write poems.', false],
        ['GOOD: Red leaves drift and fall', true],
      ]);

      const dpo = await exported(proxy, 'dpo', dpoLine);
      assert.equal(dpo.lines.length, 1, 'one pair: the same prompt answered well once and badly once');
      assert.equal(dpo.lines[0]!.chosen[0]!.content, 'GOOD: Red leaves drift and fall');
      assert.equal(dpo.lines[0]!.rejected[0]!.content, 'BAD: I cannot write poems.');
      assert.equal(dpo.lines[0]!.prompt.at(-1)!.content, HAIKU);

      const datum = await exported(proxy, 'datum', z.never());
      assert.equal(datum.lines.length, 0);
      assert.match(datum.stderr, /4 no token ids/);
    } finally {
      await proxy.dispose();
      await upstream.close();
    }
  });

  test('rl export to standard output waits for a slow reader (no line lost past a full pipe) and stops quietly when the reader closes early (| head)', async () => {
    const upstream = await ScriptedUpstream.start();
    upstream.defaultHandler = learningAwareUpstream({ chat: 'GOOD: here is the summary.', judge: () => 'Score: 1' });
    const proxy = await startProxy({ config: { ...BASE, mode: 'rl', llm: { api_base: `${upstream.url}/v1`, api_key: 'k' } } });
    // Each exported line carries this long request: two lines are far more than a pipe holds (64 KB).
    const longRequest = `Summarise this report: ${'the quarterly numbers went up and down again '.repeat(3_000)}`;
    /** `rl export` with its standard output a pipe, read as `read` says; its exit code, output and errors. */
    const exportThroughPipe = (read: (stdout: Readable, chunks: Buffer[]) => void) =>
      new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
        const child = spawn(process.execPath, [CLI, 'rl', 'export', '--format', 'sft'], { env: cleanEnv(proxy.home) });
        const chunks: Buffer[] = [];
        let stderr = '';
        child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
        read(child.stdout, chunks);
        // Both the exit and the end of what was read: the process may be gone while its last bytes wait in the pipe.
        const exited = new Promise<number | null>((done) => child.on('exit', (code) => done(code)));
        const drained = (stream: Readable) => new Promise<void>((done) => stream.on('close', () => done()));
        void Promise.all([exited, drained(child.stdout), drained(child.stderr)]).then(([code]) =>
          resolve({ code, stdout: Buffer.concat(chunks).toString('utf8'), stderr }),
        );
      });
    try {
      const client = new OpenAI({ baseURL: `${proxy.url}/v1`, apiKey: 'x', maxRetries: 0 });
      await session(client, 'long-report', [longRequest, 'Thanks.'], 'You summarise reports.');
      await waitFor(async () => (await rlStatus(proxy)).buffer.by_state.scored === 2, 20_000);

      // A reader that takes its time (a trainer, `| gzip` on a busy machine): every line arrives.
      const slow = await exportThroughPipe((stdout, chunks) => {
        // Nothing read for a second (the pipe fills and the export must wait), then a chunk every 20 ms.
        stdout.on('data', (chunk: Buffer) => {
          chunks.push(chunk);
          stdout.pause();
          setTimeout(() => stdout.resume(), 20);
        });
        stdout.pause();
        setTimeout(() => stdout.resume(), 1_000);
      });
      assert.equal(slow.code, 0, slow.stderr);
      assert.ok(slow.stdout.length > 200_000, `the export is larger than a pipe (${slow.stdout.length} bytes)`);
      const lines = slow.stdout.trimEnd().split('\n');
      assert.equal(lines.length, 2);
      for (const line of lines) sftLine.parse(JSON.parse(line));
      assert.match(slow.stderr, /^exported 2 sft line\(s\) from 2 scored sample\(s\)/);

      // A reader that stops after the first bytes (`| head -c 100`): no stack trace, exit 0.
      const head = await exportThroughPipe((stdout, chunks) => {
        stdout.once('data', (chunk: Buffer) => {
          chunks.push(chunk);
          stdout.destroy();
        });
      });
      assert.equal(head.code, 0, head.stderr);
      assert.doesNotMatch(head.stderr, /Error|EPIPE|at /);
    } finally {
      await proxy.dispose();
      await upstream.close();
    }
  });

  test('support/query separation: when the skill generation advances, older samples leave training (kept and counted) and a new one is trainable', async () => {
    let evolutions = 0;
    const upstream = await ScriptedUpstream.start();
    upstream.defaultHandler = learningAwareUpstream({
      chat: 'Run kubectl apply on the billing manifests.',
      // One evolution: the library's generation moves from 0 to 1 once.
      evolver: () => JSON.stringify({ changes: evolutions++ === 0 ? [DEPLOY_SKILL] : [] }),
      judge: () => 'Score: 1',
    });
    const home = tempHome();
    const proxy = await startProxy({
      home,
      config: {
        memory: { enabled: false },
        mode: 'auto',
        skills: { evolution_every_n_turns: 0 },
        llm: { api_base: `${upstream.url}/v1`, api_key: 'k' },
      },
    });
    try {
      const client = new OpenAI({ baseURL: `${proxy.url}/v1`, apiKey: 'x', maxRetries: 0 });
      await session(client, 'before-evolution', ['How do I deploy the billing service?', 'No, I meant with the blue-green script.']);
      await waitFor(() => existsSync(join(home, 'skills', 'blue-green-deploys', 'SKILL.md')), 20_000);
      const before = await waitFor(
        async () => {
          const current = await rlStatus(proxy);
          return current.buffer.by_generation.find((row: any) => row.generation === 0)?.scored === 2 ? current : undefined;
        },
        20_000,
        250,
      );
      assert.equal(before.buffer.current_generation, 1);
      assert.deepEqual(before.buffer.by_generation, [{ generation: 0, samples: 2, scored: 2, mean_reward: 1, dropped: 2 }]);
      assert.equal(before.buffer.by_state.dropped, 2);
      assert.equal(before.buffer.by_state.scored, 0, 'dropped samples are not counted as waiting for training');
      await waitFor(() => /older RL samples leave the trainable buffer/.test(readFileSync(join(home, 'logs', 'metaclaw.log'), 'utf8')), 5_000, 100);

      await session(client, 'after-evolution', ['Deploy the billing service to production please.']);
      const after = await waitFor(
        async () => {
          const current = await rlStatus(proxy);
          return current.buffer.by_state.scored === 1 ? current : undefined;
        },
        20_000,
        250,
      );
      assert.deepEqual(
        after.buffer.by_generation.map((row: any) => [row.generation, row.samples, row.dropped]),
        [
          [0, 2, 2],
          [1, 1, 0],
        ],
      );
      const current = await exported(proxy, 'sft', sftLine);
      assert.equal(current.lines.length, 1, 'only the sample of the current generation');
      assert.equal(current.lines[0]!.messages.at(-2)!.content, 'Deploy the billing service to production please.');
      const all = await exported(proxy, 'sft', sftLine, ['--include-dropped']);
      assert.equal(all.lines.length, 3, 'history is kept');
    } finally {
      await proxy.dispose();
      await upstream.close();
    }
  });

  test('mode auto (or madmax) without a training backend runs as skills_only and says so at start, in /status and in doctor', async () => {
    const upstream = await ScriptedUpstream.start();
    upstream.defaultHandler = learningAwareUpstream({ chat: 'ok' });
    const home = tempHome();
    const port = await freePort();
    writeFileSync(join(home, 'config.yaml'), stringify({ ...BASE, mode: 'madmax', proxy: { port }, llm: { api_base: `${upstream.url}/v1`, api_key: 'k' } }), {
      mode: 0o600,
    });
    try {
      const started = await runCli(['start'], { home });
      assert.equal(started.code, 0, started.stderr);
      assert.match(
        started.stderr,
        /warning: mode auto needs a training backend \(RL needs a Tinker API key: set rl\.api_key or TINKER_API_KEY or MINT_API_KEY\): running as skills_only/,
      );
      assert.match(started.stdout, /Mode: skills_only \(configured: auto;/);
      const report = (await (await fetch(`http://127.0.0.1:${port}/status`)).json()) as any;
      assert.equal(report.mode, 'skills_only');
      assert.equal(report.mode_configured, 'auto');
      assert.match(report.mode_reason, /running as skills_only/);
      assert.equal(report.rl.recording, true, 'samples are still recorded and judged for export');
      const shown = await runCli(['status'], { home });
      assert.match(shown.stdout, /mode {8}skills_only \(configured: auto;/);
      const doctor = await runCli(['doctor', '--json', '--no-canary'], { home });
      const check = JSON.parse(doctor.stdout).checks.find((entry: { name: string }) => entry.name === 'mode');
      assert.equal(check.verdict, 'warn');
      assert.match(check.detail, /configured auto, running as skills_only/);
      await waitFor(() => /mode: mode auto needs a training backend/.test(readFileSync(join(home, 'logs', 'metaclaw.log'), 'utf8')), 5_000, 100);

      await runCli(['stop'], { home });
      const withKey = await runCli(['doctor', '--json', '--no-canary'], { home, env: { TINKER_API_KEY: 'tml-test' } });
      const keyed = JSON.parse(withKey.stdout).checks.find((entry: { name: string }) => entry.name === 'mode');
      assert.equal(keyed.verdict, 'pass');
      assert.match(keyed.detail, /^at the next start: auto \(as configured, with the tinker backend\)/);
      const mint = await runCli(['doctor', '--json', '--no-canary'], { home, env: { MINT_API_KEY: 'sk-mint-test' } });
      assert.match(JSON.parse(mint.stdout).checks.find((entry: { name: string }) => entry.name === 'mode').detail, /with the mint backend/);

      // A key but a backend MetaClaw-TS does not train with: doctor says to change the backend, not to set a key.
      assert.equal((await runCli(['config', 'set', 'rl.backend', 'weaver'], { home })).code, 0);
      const weaver = await runCli(['doctor', '--json', '--no-canary'], { home, env: { TINKER_API_KEY: 'tml-test' } });
      const unsupported = JSON.parse(weaver.stdout).checks.find((entry: { name: string }) => entry.name === 'mode');
      assert.equal(unsupported.verdict, 'warn');
      assert.match(unsupported.detail, /rl\.backend weaver is not supported yet/);
      assert.match(unsupported.fix, /^set rl\.backend to tinker, mint or auto/);
      assert.doesNotMatch(unsupported.fix, /rl\.api_key/);
    } finally {
      await runCli(['stop'], { home });
      await upstream.close();
    }
  });
});
