import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import OpenAI from 'openai';
import { startProxy, waitFor, type ProxyHandle } from './support/proxy.js';
import { openAIReply, ScriptedUpstream } from './support/upstream.js';

/** What a terminal would act on: C0 controls but newline and tab, DEL, C1 controls. */
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/;

describe('the CLI never sends control characters from stored data to the terminal', () => {
  let upstream: ScriptedUpstream;
  let proxy: ProxyHandle;
  const sessionId = '\u001b[2J\u001b[31mPWNED';

  before(async () => {
    upstream = await ScriptedUpstream.start();
    proxy = await startProxy({ config: { llm: { api_base: `${upstream.url}/v1`, api_key: 'k' } } });
    upstream.reply(openAIReply({ text: 'done\u009b2J\u001b]0;owned\u0007 here' }));
    const client = new OpenAI({ baseURL: `${proxy.url}/v1`, apiKey: 'x', maxRetries: 0 });
    await client.chat.completions.create({
      model: 'm',
      session_id: sessionId,
      messages: [{ role: 'user', content: 'clear \u001b[2J the screen' }],
    } as OpenAI.Chat.ChatCompletionCreateParamsNonStreaming);
    await waitFor(async () =>
      (JSON.parse((await proxy.cli(['sessions', 'list', '--json'])).stdout) as Array<{ id: string }>).some((session) => session.id === sessionId),
    );
  });
  after(async () => {
    await proxy?.dispose();
    await upstream?.close();
  });

  test('sessions list and show print control characters as \\u escapes; --json keeps the exact values', async () => {
    const list = await proxy.cli(['sessions', 'list']);
    assert.equal(list.code, 0);
    assert.doesNotMatch(list.stdout, CONTROL);
    assert.ok(list.stdout.includes('\\u001b[2J\\u001b[31mPWNED'), list.stdout);

    const json = await proxy.cli(['sessions', 'list', '--json']);
    assert.doesNotMatch(json.stdout, CONTROL);
    assert.ok(
      (JSON.parse(json.stdout) as Array<{ id: string }>).some((session) => session.id === sessionId),
      'the JSON value is the stored id',
    );

    const show = await proxy.cli(['sessions', 'show', sessionId]);
    assert.equal(show.code, 0, show.stderr);
    assert.doesNotMatch(show.stdout, CONTROL);
    assert.match(show.stdout, /user: clear \\u001b\[2J the screen/);
    assert.match(show.stdout, /assistant: done\\u009b2J\\u001b\]0;owned\\u0007 here/);
    const showJson = await proxy.cli(['sessions', 'show', sessionId, '--json']);
    assert.doesNotMatch(showJson.stdout, CONTROL);
    assert.equal((JSON.parse(showJson.stdout) as { turns: Array<{ response_text: string }> }).turns[0]!.response_text, 'done\u009b2J\u001b]0;owned\u0007 here');
  });

  test('memory search prints control characters as \\u escapes, and so do error messages on stderr', async () => {
    const added = await proxy.cli(['memory', 'add', 'The deploy key rotates \u001b[8mmonthly\u001b[0m on Fridays', '--type', 'semantic']);
    assert.equal(added.code, 0, added.stderr);
    const search = await proxy.cli(['memory', 'search', 'deploy key rotates']);
    assert.doesNotMatch(search.stdout, CONTROL);
    assert.match(search.stdout, /rotates \\u001b\[8mmonthly\\u001b\[0m on Fridays/);

    const missing = await proxy.cli(['sessions', 'show', '\u001b]0;title\u0007gone']);
    assert.equal(missing.code, 1);
    assert.doesNotMatch(missing.stderr, CONTROL);
    assert.match(missing.stderr, /No session \\u001b\]0;title\\u0007gone/);
  });
});
