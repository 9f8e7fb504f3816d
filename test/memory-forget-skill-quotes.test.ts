/**
 * Forgetting a memory scrubs its text from the skill records that quote sessions word for word:
 * the evolution log (evolution_history.jsonl, each change's evidence) and the review proposals.
 * A personal install, a real proxy learning from a session, `metaclaw memory forget` in the CLI
 * process; only the LLM is scripted.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { appendFileSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import OpenAI from 'openai';
import { evolutionLogFile, SkillQuotes } from '../src/skills/index.js';
import { openDatabase } from '../src/store/index.js';
import { learningAwareUpstream, session } from './support/evolver.js';
import { REPO, startProxy, tempHome, waitFor } from './support/proxy.js';
import { ScriptedUpstream } from './support/upstream.js';

/** What the user said, and what the evolver quotes as its evidence. */
const SAID = 'The cobalt release tags look like cobalt-v7 and go out on Thursdays.';
const COBALT_SKILL = {
  action: 'create',
  name: 'cobalt-release-tags',
  description: 'Use when tagging a release of the cobalt project: the tag format and the release day.',
  category: 'automation',
  body: '# Cobalt release tags\n\n**Steps**\n1. **Tag it cobalt-vN.** N counts up.\n2. **Release on the agreed day.**',
  evidence: [`turn 1: the user said "${SAID}"`],
  reason: `The user explained: ${SAID}`,
};

describe('forgetting a memory on a personal install', () => {
  test('memory forget scrubs its text from evolution_history.jsonl (every line still JSON, 0600) and from pending proposals; a forget that quotes nothing there leaves the file untouched', async () => {
    const upstream = await ScriptedUpstream.start();
    upstream.defaultHandler = learningAwareUpstream({ evolver: () => JSON.stringify({ changes: [COBALT_SKILL] }), chat: 'Noted.' });
    const proxy = await startProxy({
      config: {
        llm: { api_base: `${upstream.url}/v1`, api_key: 'k' },
        memory: { auto_extract: false },
        skills: { evolution_every_n_turns: 0, review: 'manual' },
      },
    });
    const cli = async (args: string[]): Promise<string> => {
      const result = await proxy.cli(args);
      assert.equal(result.code, 0, `${args.join(' ')}: ${result.stderr}`);
      return result.stdout;
    };
    const log = join(proxy.home, 'skills', 'evolution_history.jsonl');
    try {
      await session(new OpenAI({ baseURL: `${proxy.url}/v1`, apiKey: 'x', maxRetries: 0 }), 'cobalt-session', [SAID, 'Thanks, that is all.']);
      await waitFor(async () => (JSON.parse(await cli(['skills', 'log', '--json'])) as unknown[]).length === 1, 30_000, 200);
      const raw = await waitFor(
        async () =>
          (await cli(['memory', 'export']))
            .split('\n')
            .filter(Boolean)
            .map((line) => JSON.parse(line) as { id: string; content: string; origin: string })
            .find((unit) => unit.content === SAID && unit.origin === 'raw_turn'),
        30_000,
        200,
      );
      assert.ok(readFileSync(log, 'utf8').includes(SAID), 'the log quotes the session before the forget');

      // A line as MetaClaw (Python) writes the log, ASCII-escaped, quoting a memory in Chinese.
      const chinese = '部署只在周二进行';
      const pythonLine = `{"timestamp": "2026-01-05T10:00:00", "session_id": "py-session", "changes": [{"evidence": ["user: ${[...chinese].map((char) => `\\u${char.charCodeAt(0).toString(16)}`).join('')}"]}]}`;
      appendFileSync(log, `${pythonLine}\n`);
      const chineseUnit = JSON.parse(await cli(['memory', 'add', chinese, '--json'])) as { id: string };

      // A memory the log does not quote: the file is not rewritten.
      const before = statSync(log);
      const other = JSON.parse(await cli(['memory', 'add', 'The lunch menu changes every Monday.', '--json'])) as { id: string };
      assert.match(await cli(['memory', 'forget', other.id]), /Forgot/);
      const after = statSync(log);
      assert.deepEqual([after.ino, after.mtimeMs, after.size], [before.ino, before.mtimeMs, before.size]);

      assert.match(await cli(['memory', 'forget', raw.id]), /Forgot/);
      const text = readFileSync(log, 'utf8');
      assert.equal(text.includes(SAID), false, 'the forgotten text is gone from the evolution log');
      assert.equal(statSync(log).mode & 0o777, 0o600);
      const lines = text.split('\n').filter(Boolean);
      assert.equal(lines.length, 2);
      assert.equal(lines[1], pythonLine, 'a line that does not quote it is kept byte for byte');
      const event = JSON.parse(lines[0]!) as { session_id: string; changes: Array<{ evidence: string[]; reason: string; status: string }> };
      assert.equal(event.session_id, 'cobalt-session');
      assert.deepEqual(event.changes[0]!.evidence, ['turn 1: the user said "[forgotten]"']);
      assert.equal(event.changes[0]!.reason, 'The user explained: [forgotten]');
      assert.match(event.changes[0]!.status, /^pending #\d+$/);
      assert.match(await cli(['skills', 'log', '--full']), /evidence: turn 1: the user said "\[forgotten\]"/);

      const [proposal] = JSON.parse(await cli(['skills', 'pending', '--json'])) as Array<{ evidence: string[]; reason: string }>;
      assert.deepEqual(proposal!.evidence, ['turn 1: the user said "[forgotten]"']);
      assert.equal(proposal!.reason, 'The user explained: [forgotten]');

      assert.match(await cli(['memory', 'forget', chineseUnit.id]), /Forgot/);
      const python = JSON.parse(readFileSync(log, 'utf8').split('\n').filter(Boolean)[1]!) as { session_id: string; changes: Array<{ evidence: string[] }> };
      assert.deepEqual([python.session_id, python.changes[0]!.evidence], ['py-session', ['user: [forgotten]']]);
    } finally {
      await proxy.dispose();
      await upstream.close();
    }
  });

  test('an evolution appended while a forget rewrites the log is kept: the proxy process appends 300 evolutions during repeated scrubs, and every line is there, scrubbed', async () => {
    const home = tempHome();
    const skillsDir = join(home, 'skills');
    mkdirSync(skillsDir, { recursive: true });
    const log = evolutionLogFile(skillsDir);
    const quoted = 'my locker code is 4417';
    writeFileSync(log, `${JSON.stringify({ seq: -1, evidence: `the user said ${quoted}` })}\n`, { mode: 0o600 });
    const quotes = new SkillQuotes(openDatabase(join(home, 'metaclaw.db')), skillsDir);
    const lines = 300;
    // As the proxy appends (SkillHistory.appendEvolution, its own connection to the database), about every 0.2 ms.
    const appender = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        '--input-type=module',
        '-e',
        `const { SkillHistory } = await import(${JSON.stringify(join(REPO, 'src/skills/history.ts'))});
         const { openDatabase } = await import(${JSON.stringify(join(REPO, 'src/store/index.ts'))});
         const history = new SkillHistory(openDatabase(${JSON.stringify(join(home, 'metaclaw.db'))}), ${JSON.stringify(skillsDir)});
         for (let seq = 0; seq < ${lines}; seq++) {
           history.appendEvolution({ seq, evidence: 'the user said ' + ${JSON.stringify(quoted)} });
           const until = process.hrtime.bigint() + 200000n;
           while (process.hrtime.bigint() < until);
         }`,
      ],
      { stdio: 'inherit', cwd: REPO },
    );
    let running = true;
    const exited = new Promise<number | null>((resolve) => appender.on('exit', (code) => ((running = false), resolve(code))));
    let scrubs = 0;
    while (running) {
      quotes.scrubTexts([quoted]);
      scrubs++;
      await new Promise((resolve) => setImmediate(resolve));
    }
    assert.equal(await exited, 0);
    quotes.scrubTexts([quoted]);
    const kept = readFileSync(log, 'utf8')
      .split('\n')
      .filter((line) => line !== '')
      .map((line) => JSON.parse(line) as { seq: number; evidence: string });
    assert.ok(scrubs > 10, `the log was rewritten while lines were appended (${scrubs} scrubs)`);
    assert.deepEqual(
      kept.map((line) => line.seq).sort((a, b) => a - b),
      Array.from({ length: lines + 1 }, (_, index) => index - 1),
      'no appended evolution lost, none doubled',
    );
    assert.ok(kept.every((line) => !line.evidence.includes(quoted)));
    assert.equal(statSync(log).mode & 0o777, 0o600);
  });
});
