import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import Database from 'better-sqlite3';
import OpenAI from 'openai';
import { databaseBytes, startProxy, waitFor, type ProxyHandle } from './support/proxy.js';
import { openAIReply, ScriptedUpstream } from './support/upstream.js';
import { AWS_SECRET, GITHUB_TOKEN, PRIVATE_KEY } from './support/secrets.js';

/** A line of the key block's base64: the block is gone if this is. */
const KEY_LINE = PRIVATE_KEY.split('\n')[2]!;
const SECRETS = [AWS_SECRET, GITHUB_TOKEN, KEY_LINE];
const USER_MESSAGE = `Deploy the app with these, please:\nAWS_SECRET_ACCESS_KEY=${AWS_SECRET}\ngit push https://${GITHUB_TOKEN}@github.com/acme/app.git\n${PRIVATE_KEY}`;
/** Over 16 KB with it, a body is stored as parts (system prompt, each message) rather than whole. */
const LARGE_SYSTEM_PROMPT = 'You are a careful deployment assistant; confirm each step before running it. '.repeat(300);
const ANSWER = `Pushed with ${GITHUB_TOKEN}; configuring AWS next.`;
const TOOL_ARGUMENTS = JSON.stringify({ command: `aws configure set aws_secret_access_key ${AWS_SECRET}` });

/** One turn carrying the three secrets, through a started proxy; `check` reads what was stored. */
async function withSecretTurn(
  config: Record<string, unknown>,
  check: (context: { proxy: ProxyHandle; id: string; upstream: ScriptedUpstream; answer: OpenAI.Chat.ChatCompletion }) => Promise<void>,
): Promise<void> {
  const upstream = await ScriptedUpstream.start();
  upstream.defaultHandler = openAIReply({ text: ANSWER, toolCalls: [{ id: 'call_1', name: 'exec', arguments: TOOL_ARGUMENTS }] });
  const proxy = await startProxy({
    config: { llm: { api_base: `${upstream.url}/v1`, api_key: 'k' }, skills: { auto_evolve: false }, memory: { auto_extract: false }, ...config },
  });
  try {
    const client = new OpenAI({ baseURL: `${proxy.url}/v1`, apiKey: 'x', maxRetries: 0 });
    const { data: answer, response } = await client.chat.completions
      .create(
        {
          model: 'm',
          messages: [
            { role: 'system', content: LARGE_SYSTEM_PROMPT },
            { role: 'user', content: USER_MESSAGE },
          ],
        },
        { headers: { 'X-Session-Id': 'deploy' } },
      )
      .withResponse();
    const id = response.headers.get('x-metaclaw-request-id')!;
    // Raw turns become memory in a learning job: wait for it, so the whole database is checked.
    await waitFor(async () => (await rememberedTurns(proxy)).length > 0, 15_000);
    await check({ proxy, id, upstream, answer });
  } finally {
    await proxy.dispose();
    await upstream.close();
  }
}

/** The raw-turn memories of the deploy request. */
async function rememberedTurns(proxy: ProxyHandle): Promise<string[]> {
  const response = await fetch(`${proxy.url}/v1/memory/search`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ query: 'deploy the app', scope: 'default' }),
  });
  const { results } = (await response.json()) as { results: Array<{ content: string; origin: string }> };
  return results.filter((unit) => unit.origin === 'raw_turn').map((unit) => unit.content);
}

interface StoredTurn {
  query: string;
  response_text: string;
  tool_calls: string;
  received: string;
  forwarded: string;
  parts: string;
}

/** The turn's rows as SQLite holds them, with every body part the stored bodies point at. */
function storedTurn(proxy: ProxyHandle, id: string): StoredTurn {
  const db = new Database(join(proxy.home, 'metaclaw.db'), { readonly: true });
  try {
    const turn = db.prepare('SELECT query, response_text, tool_calls FROM turns WHERE id = ?').get(id) as Pick<
      StoredTurn,
      'query' | 'response_text' | 'tool_calls'
    >;
    const payload = db.prepare('SELECT received, forwarded FROM turn_payloads WHERE turn_id = ?').get(id) as Pick<StoredTurn, 'received' | 'forwarded'>;
    const parts = (db.prepare('SELECT json FROM payload_segments').all() as Array<{ json: string }>).map((row) => row.json).join('\n');
    return { ...turn, ...payload, parts };
  } finally {
    db.close();
  }
}

describe('secrets in turn records', () => {
  test('the upstream and the client get every secret unchanged; the record, its rows and the database file hold markers instead', async () => {
    await withSecretTurn({}, async ({ proxy, id, upstream, answer }) => {
      const sent = upstream.modelRequests().at(-1)!.body;
      assert.equal(sent.messages.at(-1).content, USER_MESSAGE, 'forwarded as the client sent it');
      assert.equal(answer.choices[0]!.message.content, ANSWER, 'answered as the upstream sent it');
      assert.equal(
        answer.choices[0]!.message.tool_calls![0]!.type === 'function' && answer.choices[0]!.message.tool_calls![0]!.function.arguments,
        TOOL_ARGUMENTS,
      );

      const explained = (await (await fetch(`${proxy.url}/v1/requests/${id}`)).json()) as any;
      const redactedMessage = USER_MESSAGE.replace(AWS_SECRET, '[redacted aws-secret-access-key]')
        .replace(GITHUB_TOKEN, '[redacted github-token]')
        .replace(PRIVATE_KEY, '[redacted private-key]');
      assert.equal(explained.received.user_request, redactedMessage);
      assert.equal(explained.received.body.messages[1].content, redactedMessage);
      assert.equal(explained.received.body.messages[0].content, LARGE_SYSTEM_PROMPT, 'text without secrets is stored as it was');
      assert.equal(explained.forwarded.body.messages.at(-1).content, redactedMessage);
      assert.equal(explained.outcome.response.text, 'Pushed with [redacted github-token]; configuring AWS next.');
      assert.equal(
        explained.outcome.response.tool_calls[0].arguments,
        JSON.stringify({ command: 'aws configure set aws_secret_access_key [redacted aws-secret-access-key]' }),
      );

      const stored = storedTurn(proxy, id);
      assert.equal(stored.query, redactedMessage);
      for (const [column, text] of Object.entries(stored)) {
        for (const secret of SECRETS) assert.equal(text.includes(secret), false, `${column} holds ${secret.slice(0, 12)}…`);
      }
      assert.match(stored.parts, /\[redacted private-key\]/, 'the message part of the segmented body is the redacted one');
      const bytes = databaseBytes(proxy.home);
      for (const secret of SECRETS) assert.equal(bytes.includes(secret), false, `the database file or its WAL holds ${secret.slice(0, 12)}…`);

      // The next turn's system prompt is the one already found clean, with a token appended.
      const client = new OpenAI({ baseURL: `${proxy.url}/v1`, apiKey: 'x', maxRetries: 0 });
      const extended = `${LARGE_SYSTEM_PROMPT}\nRelease token: ${GITHUB_TOKEN}`;
      const { response } = await client.chat.completions
        .create(
          {
            model: 'm',
            messages: [
              { role: 'system', content: extended },
              { role: 'user', content: 'Release it.' },
            ],
          },
          { headers: { 'X-Session-Id': 'deploy' } },
        )
        .withResponse();
      assert.equal(upstream.modelRequests().at(-1)!.body.messages[0].content.startsWith(extended), true);
      const next = (await (await fetch(`${proxy.url}/v1/requests/${response.headers.get('x-metaclaw-request-id')}`)).json()) as any;
      assert.equal(next.received.body.messages[0].content, `${LARGE_SYSTEM_PROMPT}\nRelease token: [redacted github-token]`);
      assert.match(next.forwarded.body.messages[0].content, /^You are a careful[\s\S]*\nRelease token: \[redacted github-token\]/);
      assert.equal(JSON.stringify(next).includes(GITHUB_TOKEN), false);
    });
  });

  test('with store.redact_turns: false the record keeps the request and the answer as they were', async () => {
    await withSecretTurn({ store: { redact_turns: false } }, async ({ proxy, id, upstream }) => {
      assert.equal(upstream.modelRequests().at(-1)!.body.messages.at(-1).content, USER_MESSAGE);
      const explained = (await (await fetch(`${proxy.url}/v1/requests/${id}`)).json()) as any;
      assert.equal(explained.received.user_request, USER_MESSAGE);
      assert.equal(explained.received.body.messages[1].content, USER_MESSAGE);
      assert.equal(explained.outcome.response.text, ANSWER);
      const stored = storedTurn(proxy, id);
      assert.equal(stored.query, USER_MESSAGE);
      assert.equal(stored.response_text, ANSWER);
      assert.ok(stored.parts.includes(KEY_LINE) && stored.parts.includes(GITHUB_TOKEN), 'the body parts keep them');
      // Memory redacts on its own, whatever the turn record keeps.
      const remembered = await rememberedTurns(proxy);
      assert.match(remembered[0]!, /\[redacted github-token\]/);
      for (const content of remembered) for (const secret of SECRETS) assert.equal(content.includes(secret), false);
    });
  });
});
