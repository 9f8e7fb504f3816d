import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { runCli, startProxy, waitFor, type ProxyHandle } from './support/proxy.js';
import { ScriptedUpstream } from './support/upstream.js';

/** A small tmpfs as METACLAW_HOME: the real thing a full disk is. Needs root (CI and this machine run as root). */
function mountSmallDisk(megabytes: number): { home: string; unmount: () => void } | undefined {
  const home = mkdtempSync(join(tmpdir(), 'metaclaw-full-'));
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${megabytes}m,mode=0700`, 'tmpfs', home], { stdio: 'ignore' });
  } catch {
    rmSync(home, { recursive: true, force: true });
    return undefined;
  }
  return {
    home,
    unmount: () => {
      execFileSync('umount', ['-l', home], { stdio: 'ignore' });
      rmSync(home, { recursive: true, force: true });
    },
  };
}

/** Writes zeros to `path` until the disk says no more. */
function fillDisk(path: string): void {
  const fd = openSync(path, 'w');
  const block = Buffer.alloc(64 * 1024);
  try {
    for (;;) writeSync(fd, block);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOSPC') throw error;
  } finally {
    closeSync(fd);
  }
}

const disk = mountSmallDisk(32);
const skipReason = disk ? false : 'mounting a tmpfs needs root (mount -t tmpfs); run the suite as root to include this test';

describe('a full disk under METACLAW_HOME', { skip: skipReason }, () => {
  let upstream: ScriptedUpstream;
  let proxy: ProxyHandle;
  const status = async () => (await (await fetch(`${proxy.url}/status`)).json()) as any;

  before(async () => {
    upstream = await ScriptedUpstream.start();
    proxy = await startProxy({ home: disk!.home, config: { llm: { api_base: `${upstream.url}/v1`, api_key: 'k' } } });
  });
  after(async () => {
    await proxy?.stop();
    await upstream?.close();
    disk?.unmount();
  });

  test('the proxy keeps serving, recording pauses with a visible error, and everything is recorded once space returns', async () => {
    const openai = new OpenAI({ baseURL: `${proxy.url}/v1`, apiKey: 'x', maxRetries: 0 });
    const anthropic = new Anthropic({ baseURL: proxy.url, apiKey: 'x', maxRetries: 0 });
    for (let index = 0; index < 5; index++)
      await openai.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: `before the disk fills ${index}` }] });
    await waitFor(async () => (await status()).sessions.turns === 5);

    const filler = join(disk!.home, 'filler');
    fillDisk(filler);
    // A burst while nothing can be written: every answer arrives, in both APIs, streamed or not.
    const answers = await Promise.all(
      Array.from({ length: 30 }, async (_, index) => {
        const content = `on a full disk ${index} ${'words '.repeat(200)}`;
        if (index % 3 === 0) {
          const stream = await openai.chat.completions.create({ model: 'm', stream: true, messages: [{ role: 'user', content }] });
          let text = '';
          for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
          return text;
        }
        if (index % 3 === 1) return (await openai.chat.completions.create({ model: 'm', messages: [{ role: 'user', content }] })).choices[0]!.message.content;
        const message = await anthropic.messages.create({ model: 'm', max_tokens: 10, messages: [{ role: 'user', content }] });
        return message.content[0]!.type === 'text' ? message.content[0].text : '';
      }),
    );
    assert.deepEqual(new Set(answers), new Set(['Hello from the scripted upstream.']), 'every request was answered');

    const paused = await waitFor(async () => {
      const current = await status();
      return current.store.writable === false && current.store.recording.held > 0 ? current : undefined;
    });
    assert.match(paused.store.last_error.code, /ENOSPC|SQLITE_FULL|SQLITE_IOERR/);
    assert.ok(paused.learning.paused, 'learning is paused while the store cannot be written');
    assert.equal(paused.requests.errors.uncaught, 0);
    const doctor = await proxy.cli(['doctor', '--no-canary']);
    assert.match(doctor.stdout, /cannot write its store/);

    rmSync(filler);
    const resumed = await waitFor(async () => {
      const current = await status();
      return current.store.writable && current.sessions.turns === 35 ? current : undefined;
    }, 20_000);
    assert.equal(resumed.store.recording.held, 0);
    assert.equal(resumed.store.recoveries, 1);
    const again = await openai.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'after the space came back' }] });
    assert.equal(again.choices[0]!.message.content, 'Hello from the scripted upstream.');
    await waitFor(async () => (await status()).sessions.turns === 36);
  });

  test('metaclaw start on a full disk says the disk is full instead of pointing at an empty file', async () => {
    await proxy.stop();
    const filler = join(disk!.home, 'filler');
    fillDisk(filler);
    try {
      const started = await runCli(['start', '--no-wire'], { home: disk!.home, timeoutMs: 60_000 });
      assert.notEqual(started.code, 0);
      assert.match(started.stderr + started.stdout, /disk holding .* is full/);
    } finally {
      rmSync(filler, { force: true });
    }
  });
});
