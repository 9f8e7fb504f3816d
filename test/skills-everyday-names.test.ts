import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { skillBankProxy } from './support/skill-banks.js';

/** A bank written by others (the dev4 set): its names hold everyday words ("hook", "tunnel", "photo") beside product names. */
const BANK = new URL('./fixtures/dev4-skills/bank', import.meta.url).pathname;

describe('a skill whose name is an everyday word (claude-code-hooks, tunnel-doctor, photo-to-scanned-pdf)', () => {
  const injected = skillBankProxy(BANK);

  test('a request that meets it only through that word and another common one gets no skill', async () => {
    assert.deepEqual(await injected("what's a good hook for the opening line of my wedding speech?", 'speech'), []);
    assert.deepEqual(await injected('why do road tunnels cost so much more to build than bridges?', 'tunnels'), []);
    assert.deepEqual(await injected('tips for taking better photos of the night sky with my phone', 'sky'), []);
  });

  test('a request about the skill still gets it', async () => {
    assert.deepEqual(await injected('my PreToolUse hook blocks every Bash command and now the session is stuck', 'hook'), ['claude-code-hooks']);
    assert.deepEqual(await injected('Tailscale ping works but ssh times out since I turned on the Clash proxy', 'tailscale'), ['tunnel-doctor']);
  });
});
