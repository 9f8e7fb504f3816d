/**
 * The setup wizard as a person uses it: in a real terminal (a pseudo-terminal made by util-linux's
 * `script`), answering the prompts with keystrokes.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { parse } from 'yaml';
import { CLI, tempHome } from './support/proxy.js';
import { json, openAIReply, ScriptedUpstream } from './support/upstream.js';

const SCRIPT = '/usr/bin/script';
const DOWN = '\u001b[B';
const ANSI = /\u001b\[[0-9;?]*[A-Za-z]/g;

let upstream: ScriptedUpstream;
const homes: string[] = [];
before(async () => {
  upstream = await ScriptedUpstream.start();
  upstream.defaultHandler = (request, response) => {
    if (request.headers['authorization'] !== 'Bearer typed-secret-key') return json(response, 401, { error: { message: 'Invalid API key' } });
    if (request.method === 'GET') return json(response, 200, { object: 'list', data: [{ id: 'wizard-model' }] });
    return openAIReply({ text: 'ok' })(request, response);
  };
});
after(async () => {
  await upstream.close();
  for (const home of homes) rmSync(home, { recursive: true, force: true });
});

/** `metaclaw setup` in a 120×40 pseudo-terminal; `answer` waits for a prompt, then types. */
function wizard(home: string): { child: ChildProcess; answer(prompt: string, keys: string): Promise<void>; screen(): string; exited: Promise<number | null> } {
  const command = `stty cols 120 rows 40; exec '${process.execPath}' '${CLI}' setup`;
  const child = spawn(SCRIPT, ['-qfec', command, '/dev/null'], {
    env: { PATH: process.env['PATH'], HOME: home, METACLAW_HOME: home, TERM: 'xterm-256color' },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let output = '';
  let seen = 0;
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  return {
    child,
    exited,
    screen: () => output.replace(ANSI, ''),
    async answer(prompt, keys) {
      const deadline = Date.now() + 20_000;
      for (;;) {
        const text = output.replace(ANSI, '');
        const at = text.indexOf(prompt, seen);
        if (at >= 0) {
          seen = at + prompt.length;
          break;
        }
        if (Date.now() > deadline) throw new Error(`the wizard never asked "${prompt}"; the screen shows:\n${text.slice(-1500)}`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      await new Promise((resolve) => setTimeout(resolve, 150)); // let the prompt take raw input
      for (const key of keys.match(/\u001b\[[A-D]|[\s\S]/g) ?? []) {
        child.stdin.write(key);
        await new Promise((resolve) => setTimeout(resolve, 15));
      }
    },
  };
}

describe('metaclaw setup in a terminal', { skip: existsSync(SCRIPT) ? false : 'needs util-linux script(1) for a pseudo-terminal' }, () => {
  test('a person answers the questions; the key is typed hidden, checked against the API, and the config written', async () => {
    const home = tempHome('metaclaw-wizard-');
    homes.push(home);
    const run = wizard(home);
    await run.answer('How should MetaClaw learn?', '\r'); // skills_only
    await run.answer('Which LLM provider?', `${DOWN.repeat(10)}\r`); // custom
    await run.answer('Base URL of the API', `${upstream.url}/v1\r`);
    await run.answer('Model', 'wizard-model\r');
    await run.answer('API key', '\r'); // type it (hidden)
    await run.answer('API key', 'typed-secret-key\r');
    await run.answer('Which agent should MetaClaw wire to the proxy?', '\r'); // none (nothing detected)
    await run.answer('Proxy port', '\r');
    await run.answer('Install the starter skills', 'n'); // a confirm takes y/n without Enter; a following \r would answer the next question
    await run.answer('Keep long-term memory', '\r');
    assert.equal(await run.exited, 0, run.screen().slice(-2000));
    assert.match(run.screen(), /OK: reached http:\/\/127\.0\.0\.1:\d+\/v1; the key works/);
    assert.ok(!run.screen().includes('typed-secret-key'), 'the key is never echoed');
    const written = parse(readFileSync(join(home, 'config.yaml'), 'utf8'));
    assert.equal(written.llm.provider, 'custom');
    assert.equal(written.llm.api_base, `${upstream.url}/v1`);
    assert.equal(written.llm.model_id, 'wizard-model');
    assert.equal(written.llm.api_key, 'typed-secret-key');
    assert.equal(written.claw_type, 'none');
    assert.equal(existsSync(join(home, 'skills')), false, 'starter skills declined');
  });

  test('Ctrl-C at a question cancels and writes nothing', async () => {
    const home = tempHome('metaclaw-wizard-');
    homes.push(home);
    const run = wizard(home);
    await run.answer('How should MetaClaw learn?', '\u0003');
    assert.notEqual(await run.exited, 0);
    assert.match(run.screen(), /Setup cancelled; nothing was written/);
    assert.equal(existsSync(join(home, 'config.yaml')), false);
  });
});
