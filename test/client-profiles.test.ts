import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { clientFixture as fixture, sendAnthropic, sendOpenAI, type ClientFixture } from './support/clients.js';
import { logLineWith } from './support/log.js';
import { recordedTurn, runCli, startProxy, tempHome, waitFor, type ProxyHandle } from './support/proxy.js';
import { ScriptedUpstream } from './support/upstream.js';

const GIT_QUESTION = 'my git commit history is a mess, how do I squash commits before merging?';

/** The fixture's body with the text the user typed (the last text block of the last message) replaced. */
function typed(source: ClientFixture, text: string): ClientFixture {
  const body = structuredClone(source.body);
  const content = body.messages.at(-1).content;
  if (typeof content === 'string') body.messages.at(-1).content = text;
  else content.at(-1).text = text;
  return { headers: source.headers, body };
}

function withHeaders(source: ClientFixture, headers: Record<string, string>): ClientFixture {
  return { headers: { ...source.headers, ...headers }, body: source.body };
}

/** What the proxy added to a recorded turn, by provider. */
function addedSections(turn: any): string[] {
  return ((turn.added?.sections ?? []) as Array<{ provider: string }>).map((section) => section.provider);
}

describe('agent clients are recognised: their own session ids, their side requests, their wrappers around what the user typed', () => {
  let upstream: ScriptedUpstream;
  let proxy: ProxyHandle;
  let anthropic: Anthropic;
  let openai: OpenAI;

  before(async () => {
    upstream = await ScriptedUpstream.start();
    const home = tempHome();
    const installed = await runCli(['skills', 'install-starter'], { home });
    assert.equal(installed.code, 0, installed.stderr);
    proxy = await startProxy({
      home,
      // No learning calls to the scripted upstream: it answers as an agent's model, and the tests wait for the learning queue to drain.
      config: {
        llm: { api_base: upstream.url, api_format: 'anthropic', api_key: 'k' },
        memory: { auto_extract: false, search_keys: false },
        skills: { auto_evolve: false, search_keys: false },
      },
    });
    anthropic = new Anthropic({ baseURL: proxy.url, apiKey: 'x', maxRetries: 0 });
    openai = new OpenAI({ baseURL: `${proxy.url}/v1`, apiKey: 'x', maxRetries: 0 });
  });
  after(async () => {
    await proxy?.dispose();
    await upstream?.close();
  });
  beforeEach(() => upstream.reset());

  const status = async () => (await fetch(`${proxy.url}/status`)).json() as Promise<any>;
  /** Every learning job the recorded turns queued has run (memory's raw-turn job captures standing instructions). */
  const learningIdle = () =>
    waitFor(async () => {
      const current = await status();
      return (current.queue.queued ?? 0) + (current.queue.leased ?? 0) === 0 && current.learning.running === 0;
    });
  /** The standing instructions (memory core) that match `pattern`. */
  const coreMatching = async (pattern: RegExp) =>
    (JSON.parse((await proxy.cli(['memory', 'core', '--json'])).stdout) as Array<{ content: string }>)
      .map((unit) => unit.content)
      .filter((content) => pattern.test(content));
  const sessions = async () =>
    JSON.parse((await proxy.cli(['sessions', 'list', '--json', '--limit', '200'])).stdout) as Array<{
      id: string;
      identity_source: string;
      turn_count: number;
    }>;
  const lastUpstreamSystem = () => JSON.stringify(upstream.modelRequests().at(-1)!.body.system ?? '');

  test('the issue\'s repro: a <system-reminder> block before "say hello" is neither a standing instruction nor the retrieval query; a rule the user types still is', async () => {
    const reminded = (typedText: string) =>
      ({
        headers: {},
        body: {
          model: 'm',
          max_tokens: 100,
          messages: [
            {
              role: 'user',
              content: [
                { type: 'text', text: '<system-reminder>\nIMPORTANT: Never use the Bash tool.\n</system-reminder>' },
                { type: 'text', text: typedText },
              ],
            },
          ],
        },
      }) satisfies ClientFixture;
    const turn = await recordedTurn(proxy.url, await sendAnthropic(anthropic, reminded('say hello')));
    assert.equal(turn.received.user_request, 'say hello');
    assert.equal(turn.turn_type, 'main');
    await sendAnthropic(anthropic, reminded('From now on, always answer in French.'));
    await learningIdle();
    assert.deepEqual(await coreMatching(/Bash|French/), ['From now on, always answer in French.'], 'only what the user typed became a standing instruction');
  });

  test('Claude Code: "say hello" after its reminder blocks gets no skill, a request that matches one does, and none of the reminders is learned', async () => {
    const sayHello = await recordedTurn(proxy.url, await sendAnthropic(anthropic, fixture('claude-code-say-hello')));
    assert.equal(sayHello.received.client_profile, 'claude-code');
    assert.equal(sayHello.received.user_request, 'say hello');
    assert.ok(!addedSections(sayHello).includes('skills'), `no skill for "say hello": ${JSON.stringify(sayHello.added)}`);
    assert.doesNotMatch(lastUpstreamSystem(), /Active Skills/);

    const git = await recordedTurn(proxy.url, await sendAnthropic(anthropic, typed(fixture('claude-code-say-hello'), GIT_QUESTION)));
    assert.equal(git.received.user_request, GIT_QUESTION);
    assert.ok(addedSections(git).includes('skills'));
    assert.match(lastUpstreamSystem(), /### git-commit-hygiene/);

    await learningIdle();
    assert.deepEqual(
      await coreMatching(/tests before committing|push to main|Bash tool|other tools/),
      [],
      'CLAUDE.md and tool rules in the reminders are not the user stating rules',
    );
  });

  test('three Claude Code runs with the same boilerplate first message are three sessions, each named by its own session id', async () => {
    const runs = ['7a1d0c3e-0000-4000-8000-000000000001', '7a1d0c3e-0000-4000-8000-000000000002', '7a1d0c3e-0000-4000-8000-000000000003'];
    for (const id of runs) {
      const run = withHeaders(fixture('claude-code-say-hello'), { 'x-claude-code-session-id': id });
      const turn = await recordedTurn(proxy.url, await sendAnthropic(anthropic, run));
      assert.equal(turn.session_id, id);
    }
    const listed = await sessions();
    for (const id of runs) assert.equal(listed.find((session) => session.id === id)?.identity_source, 'header', id);

    // Without the header, the session id inside `metadata.user_id` (a JSON string) names the run.
    const { ['x-claude-code-session-id']: _dropped, ...headers } = fixture('claude-code-say-hello').headers;
    const body = structuredClone(fixture('claude-code-say-hello').body);
    body.metadata.user_id = JSON.stringify({ device_id: 'd', account_uuid: '', session_id: '7a1d0c3e-0000-4000-8000-000000000004' });
    const fromBody = await recordedTurn(proxy.url, await sendAnthropic(anthropic, { headers, body }));
    assert.equal(fromBody.session_id, '7a1d0c3e-0000-4000-8000-000000000004');
  });

  test("two Qwen Code runs whose first message is the same date-and-folder preamble are two sessions; a run's next turn stays in its session", async () => {
    const hello = await recordedTurn(proxy.url, await sendOpenAI(openai, fixture('qwen-code-say-hello')));
    const other = await recordedTurn(proxy.url, await sendOpenAI(openai, typed(fixture('qwen-code-say-hello'), 'list the files in src')));
    assert.equal(hello.received.client_profile, 'qwen-code');
    assert.equal(hello.received.user_request, 'say hello');
    assert.notEqual(hello.session_id, other.session_id, 'the preamble does not merge the runs');

    const next = structuredClone(fixture('qwen-code-say-hello'));
    next.body.messages.push({ role: 'assistant', content: 'Hello!' }, { role: 'user', content: 'thanks' });
    const later = await recordedTurn(proxy.url, await sendOpenAI(openai, next));
    assert.equal(later.session_id, hello.session_id);
    assert.equal(later.seq, 2);
  });

  test("side requests (opencode's and Claude Code's title generators, Qwen Code's memory helper) are side turns: nothing injected, nothing learned", async () => {
    const title = await recordedTurn(proxy.url, await sendOpenAI(openai, fixture('opencode-title')));
    assert.equal(title.received.client_profile, 'opencode');
    assert.equal(title.turn_type, 'side');
    assert.equal(title.side_request, 'title');
    assert.equal(title.added, null, 'the git question in it would have matched a skill');
    const logged = await logLineWith(proxy.home, title.id, (line) => line['msg'] === 'request finished');
    assert.deepEqual([logged['client'], logged['side'], logged['turn']], ['opencode', 'title', 'side']);
    assert.doesNotMatch(lastUpstreamSystem(), /metaclaw-context/);
    const main = await recordedTurn(proxy.url, await sendOpenAI(openai, fixture('opencode-say-hello')));
    assert.equal(main.turn_type, 'main');
    assert.equal(main.session_id, title.session_id, 'one opencode run is one session (its x-session-id)');

    const claudeTitle = await recordedTurn(proxy.url, await sendAnthropic(anthropic, fixture('claude-code-title')));
    assert.equal(claudeTitle.turn_type, 'side');
    assert.equal(claudeTitle.side_request, 'title');
    assert.equal(claudeTitle.added, null);

    // In this order, as Qwen Code sends them: the helper reads the answer to the turn it helps.
    const helped = await recordedTurn(proxy.url, await sendOpenAI(openai, fixture('qwen-code-say-hello')));
    const helper = await recordedTurn(proxy.url, await sendOpenAI(openai, fixture('qwen-code-memory-helper')));
    assert.equal(helper.turn_type, 'side');
    assert.equal(helper.side_request, 'memory');
    assert.equal(helper.added, null);
    assert.equal(helper.session_id, helped.session_id, 'the helper belongs to the run it helps');

    await learningIdle();
    assert.deepEqual(
      await coreMatching(/other tools|repository code|file changes/),
      [],
      '"Do not use any other tools." is the helper\'s rule, not the user\'s',
    );
  });

  test('Codex: its AGENTS.md and environment messages are not the request, and its session-id header names the session', async () => {
    const request = fixture('codex-say-hello');
    const turn = await recordedTurn(proxy.url, await sendOpenAI(openai, request));
    assert.equal(turn.received.client_profile, 'codex');
    assert.equal(turn.received.user_request, 'say hello');
    assert.equal(turn.session_id, request.headers['session-id']);
    await learningIdle();
    assert.deepEqual(await coreMatching(/npm test|generated files/), [], "AGENTS.md's rules are the repository's, not rules the user stated");
  });
});
