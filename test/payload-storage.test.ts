import assert from 'node:assert/strict';
import { hash } from 'node:crypto';
import { join } from 'node:path';
import { rmSync } from 'node:fs';
import { describe, test } from 'node:test';
import Database from 'better-sqlite3';
import OpenAI from 'openai';
import { MIGRATIONS, openDatabase } from '../src/store/index.js';
import { runCli, startProxy, tempHome, type ProxyHandle } from './support/proxy.js';
import { ScriptedUpstream } from './support/upstream.js';

type Message = OpenAI.Chat.Completions.ChatCompletionMessageParam;

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

/** An agent's system prompt, over 16 KB: large enough that every store splits it into a shared part. */
const SYSTEM_PROMPT = 'You are a careful coding agent. Read the workspace before you change it, keep commits small, and explain what you did. '.repeat(160);

const WORDS = 'garden tomato compiler river lantern budget invoice meadow falcon harbor quartz velvet canyon ember orchard'.split(' ');
/** A message of about `length` characters that no other turn repeats. */
function prose(seed: number, length: number): string {
  const words: string[] = [`(${seed})`];
  for (let index = 0; words.join(' ').length < length; index++) words.push(WORDS[(seed * 7 + index * 3) % WORDS.length]!);
  return words.join(' ');
}

async function explain(
  proxy: ProxyHandle,
  id: string,
): Promise<{ received: { body: { messages: Message[] } | null }; forwarded: { body: { messages: Message[] } | null } }> {
  const response = await fetch(`${proxy.url}/v1/requests/${id}`);
  assert.equal(response.status, 200, `turn ${id} is recorded`);
  return (await response.json()) as never;
}

/**
 * Runs `body` in a fresh home with a scripted upstream. `start` starts the proxy there (again after
 * a stop); by default one that learns nothing, so the only bodies stored are the agent's. The last
 * proxy started is stopped and the home removed at the end.
 */
async function inHome(
  body: (context: {
    home: string;
    upstream: ScriptedUpstream;
    start: (options?: { learning?: boolean; config?: Record<string, unknown> }) => Promise<ProxyHandle>;
  }) => Promise<void>,
): Promise<void> {
  const upstream = await ScriptedUpstream.start();
  const home = tempHome();
  let proxy: ProxyHandle | undefined;
  const start = async ({ learning = false, config = {} }: { learning?: boolean; config?: Record<string, unknown> } = {}) => {
    const llm = { api_base: `${upstream.url}/v1`, api_key: 'k' };
    proxy = await startProxy({
      home,
      config: learning ? { llm, ...config } : { llm, memory: { auto_extract: false }, skills: { auto_evolve: false }, ...config },
    });
    return proxy;
  };
  try {
    await body({ home, upstream, start });
  } finally {
    await proxy?.stop();
    await upstream.close();
    rmSync(home, { recursive: true, force: true });
  }
}

/**
 * An agent session: each turn resends the whole conversation plus one new user message, and the
 * answer joins the history. Waits for each turn's record (GET /v1/requests/{id} waits for it), as
 * turns an agent sends are also apart in time. Returns each turn's request id and messages.
 */
async function converse(
  proxy: ProxyHandle,
  sessionId: string,
  turns: number,
  system: string,
  messageChars: number,
  ask = (_turn: number) => '',
): Promise<Array<{ id: string; messages: Message[] }>> {
  const client = new OpenAI({ baseURL: `${proxy.url}/v1`, apiKey: 'x', maxRetries: 0 });
  const history: Message[] = [{ role: 'system', content: system }];
  const sent: Array<{ id: string; messages: Message[] }> = [];
  for (let turn = 0; turn < turns; turn++) {
    const question = ask(turn);
    history.push({ role: 'user', content: `${question} ${prose(turn * 2, messageChars - question.length)}`.trim() });
    const { response } = await client.chat.completions
      .create({ model: 'agent-model', messages: history }, { headers: { 'X-Session-Id': sessionId } })
      .withResponse();
    const id = response.headers.get('x-metaclaw-request-id')!;
    await explain(proxy, id);
    sent.push({ id, messages: structuredClone(history) });
    history.push({ role: 'assistant', content: prose(turn * 2 + 1, messageChars) });
  }
  return sent;
}

/**
 * The store as it is thirty days later, when the retention cutoff falls inside the session: every
 * turn started 30 days earlier (less an hour), the `old` ones two hours before that. Stores from
 * before schema 5 also dated each part by when it was last written (a part written again the same
 * day was not rewritten): those dates move with the turns that wrote them.
 */
function thirtyDaysLater(home: string, old: readonly string[]): void {
  const db = new Database(join(home, 'metaclaw.db'));
  try {
    const marks = old.map(() => '?').join(',');
    const firstKept = (db.prepare(`SELECT MIN(started_at) AS at FROM turns WHERE id NOT IN (${marks})`).get(...old) as { at: number }).at;
    const shift = 30 * DAY - HOUR;
    db.transaction(() => {
      db.prepare(`UPDATE turns SET started_at = started_at - ? - (CASE WHEN id IN (${marks}) THEN ? ELSE 0 END)`).run(shift, ...old, 2 * HOUR);
      const columns = (db.prepare('PRAGMA table_info(payload_segments)').all() as Array<{ name: string }>).map((column) => column.name);
      if (columns.includes('last_used_at'))
        db.prepare('UPDATE payload_segments SET last_used_at = last_used_at - ? - (CASE WHEN last_used_at < ? THEN ? ELSE 0 END)').run(
          shift,
          firstKept,
          2 * HOUR,
        );
    })();
  } finally {
    db.close();
  }
}

/** Everything stored for the turns' bodies, in characters: the documents, what was injected, headers, and the parts with their hashes and counts. */
function storedBodyChars(home: string): { stored: number; detail: string } {
  const db = new Database(join(home, 'metaclaw.db'), { readonly: true });
  try {
    const tables = (db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all() as Array<{ name: string }>).map((table) => table.name);
    const payloads = (
      db
        .prepare(
          'SELECT SUM(COALESCE(length(received), 0) + COALESCE(length(injected), 0) + COALESCE(length(forwarded), 0) + COALESCE(length(received_headers), 0) + COALESCE(length(stripped_keys), 0)) AS size FROM turn_payloads',
        )
        .get() as { size: number }
    ).size;
    const parts = (db.prepare('SELECT SUM(length(hash) + length(json)) AS size FROM payload_segments').get() as { size: number | null }).size ?? 0;
    const counts = tables.includes('payload_segment_refs')
      ? ((db.prepare('SELECT SUM(length(hash) + 8) AS size FROM payload_segment_refs').get() as { size: number | null }).size ?? 0)
      : 0;
    return { stored: payloads + parts + counts, detail: `bodies ${payloads}, parts ${parts}, counts ${counts}` };
  } finally {
    db.close();
  }
}

/** Questions that starter skills answer, so MetaClaw injects a different block as the topic changes. */
const SKILLED_QUESTIONS = [
  'my git commit history is a mess, how do I squash commits before merging?',
  'this unit test is flaky and fails randomly in CI, how do I diagnose it?',
  'how do I write a SQL query that finds duplicate rows?',
  'our cron job runs at the wrong hour after daylight saving time, is it a timezone bug?',
  'the node process memory keeps growing, how do I hunt the memory leak?',
  'how do I make this bash shell script safe to run twice?',
  'how should I design the HTTP API endpoints for pagination?',
  'how do I store money amounts without floating point errors?',
];

/** Waits until retention has dropped the body of turn `id`. */
async function prunedAway(proxy: ProxyHandle, id: string): Promise<void> {
  const deadline = Date.now() + 15_000;
  while ((await explain(proxy, id)).received.body !== null) {
    assert.ok(Date.now() < deadline, `the body of ${id}, past retention, is dropped`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/**
 * A store written before schema 5: large bodies as documents of the first format, a hash per
 * message, parts dated by when they were last written. Two turns of one session share the system
 * prompt and first message; the first turn is 40 days old, the second an hour.
 */
function storeOfTheFirstFormat(home: string): { old: string; kept: string; messages: Message[] } {
  const db = openDatabase(join(home, 'metaclaw.db'), { migrations: MIGRATIONS.filter((migration) => migration.version <= 4) });
  const now = Date.now();
  const messages: Message[] = [
    { role: 'system', content: SYSTEM_PROMPT },
    { role: 'user', content: prose(1, 300) },
    { role: 'assistant', content: prose(2, 300) },
    { role: 'user', content: prose(3, 300) },
  ];
  const part = (value: unknown) => {
    const json = JSON.stringify(value);
    const key = hash('sha256', json, 'base64url');
    // Written by the first turn; the second, the same day then, did not write it again.
    db.prepare('INSERT OR IGNORE INTO payload_segments (hash, json, last_used_at) VALUES (?, ?, ?)').run(key, json, now - 40 * DAY);
    return key;
  };
  const document = (list: Message[]) => JSON.stringify({ v: 1, order: ['model', 'messages'], head: { model: 'agent-model' }, messages: list.map(part) });
  db.prepare(
    "INSERT INTO sessions (id, identity_source, lineage, scope, client_format, started_at, last_turn_at, turn_count, main_turn_count) VALUES ('old-session', 'header', 'old', 'default', 'openai', ?, ?, 2, 2)",
  ).run(now - 40 * DAY, now - HOUR);
  const turn = db.prepare(
    "INSERT INTO turns (id, session_id, seq, turn_type, client_format, model, stream, query, outcome, attempts, started_at) VALUES (?, 'old-session', ?, 'main', 'openai', 'agent-model', 0, 'q', 'ok', 1, ?)",
  );
  const payload = db.prepare(
    "INSERT INTO turn_payloads (turn_id, received, injected, forwarded, received_headers, stripped_keys) VALUES (?, ?, NULL, ?, '{}', '[]')",
  );
  turn.run('req_old', 1, now - 40 * DAY);
  payload.run('req_old', document(messages.slice(0, 2)), document(messages.slice(0, 2)));
  turn.run('req_kept', 2, now - HOUR);
  payload.run('req_kept', document(messages), document(messages));
  db.close();
  return { old: 'req_old', kept: 'req_kept', messages };
}

describe('stored bodies', () => {
  test('retention keeps every part a kept body uses: once the first turns of a session are pruned, its later turns still return their full bodies', async () => {
    await inHome(async ({ home, start }) => {
      const first = await start();
      const turns = await converse(first, 'retention-session', 6, SYSTEM_PROMPT, 300);
      await first.stop();
      const pruned = turns.slice(0, 3);
      thirtyDaysLater(
        home,
        pruned.map((turn) => turn.id),
      );
      // Retention (store.payload_retention_days, 30) runs at start.
      const proxy = await start();
      await prunedAway(proxy, pruned[0]!.id);
      for (const turn of pruned) assert.equal((await explain(proxy, turn.id)).received.body, null, `${turn.id} is past retention`);
      for (const turn of turns.slice(3)) {
        const explained = await explain(proxy, turn.id);
        assert.deepEqual(explained.received.body?.messages, turn.messages, `${turn.id} keeps its whole received body`);
        assert.deepEqual(explained.forwarded.body?.messages, turn.messages, `${turn.id} keeps its whole forwarded body`);
      }
    });
  });

  test('a store from before schema 5 is upgraded: its bodies read as they did, and retention keeps the parts its kept bodies use', async () => {
    await inHome(async ({ home, start }) => {
      const { old, kept, messages } = storeOfTheFirstFormat(home);
      const proxy = await start();
      await prunedAway(proxy, old);
      const explained = await explain(proxy, kept);
      assert.deepEqual(explained.received.body, { model: 'agent-model', messages }, 'the kept body of the first format reads whole');
      assert.deepEqual(explained.forwarded.body, { model: 'agent-model', messages });
    });
  });

  test('a body whose stored part is gone shows that part as missing, and the rest of the body, instead of null', async () => {
    await inHome(async ({ home, start }) => {
      const first = await start();
      const turns = await converse(first, 'damaged-session', 2, SYSTEM_PROMPT, 300);
      await first.stop();
      const sent = turns[1]!.messages;
      const db = new Database(join(home, 'metaclaw.db'));
      const deleted = db.prepare('DELETE FROM payload_segments WHERE json LIKE ?').run(`%${sent[1]!.content as string}%`).changes;
      db.close();
      assert.equal(deleted, 1, 'the message was stored as one part');
      const proxy = await start();
      const messages = (await explain(proxy, turns[1]!.id)).received.body?.messages as unknown[] | undefined;
      assert.ok(messages, 'the body is still shown');
      assert.equal(messages.length, 4);
      assert.deepEqual(messages[0], sent[0], 'the system prompt is intact');
      assert.deepEqual(Object.keys(messages[1] as object), ['metaclaw_missing_part'], 'the missing message is marked where it was');
      assert.deepEqual(messages.slice(2), sent.slice(2), 'the messages after it are intact');
    });
  });

  test('fifty turns of an agent resending its growing conversation (about 40 KB at the end) take at most 3 times the size of that conversation', async (t) => {
    await inHome(async ({ home, start }) => {
      const proxy = await start({ learning: true });
      const turns = await converse(proxy, 'growing-session', 50, prose(1_000, 8_000), 330);
      await proxy.stop();
      const conversation = JSON.stringify({ model: 'agent-model', messages: turns.at(-1)!.messages }).length;
      assert.ok(conversation > 38_000 && conversation < 46_000, `the conversation reaches about 40 KB (${conversation})`);
      const { stored, detail } = storedBodyChars(home);
      t.diagnostic(`stored ${stored} characters for a ${conversation}-character conversation: ${(stored / conversation).toFixed(2)}× (${detail})`);
      assert.ok(
        stored <= 3 * conversation,
        `50 turns stored in ${stored} characters: ${(stored / conversation).toFixed(1)}× the ${conversation}-character conversation (${detail})`,
      );
    });
  });

  test('fifty Responses API turns resending their growing input (Codex with store: false) take at most 4 times the size of that conversation, the translated chat body (a second copy) included', async (t) => {
    await inHome(async ({ home, start }) => {
      const proxy = await start({ learning: true });
      const client = new OpenAI({ baseURL: `${proxy.url}/v1`, apiKey: 'x', maxRetries: 0 });
      const instructions = prose(1_000, 8_000);
      const input: OpenAI.Responses.ResponseInputItem[] = [];
      for (let turn = 0; turn < 50; turn++) {
        input.push({ role: 'user', content: [{ type: 'input_text', text: prose(turn * 2, 330) }] });
        const { response } = await client.responses
          .create({ model: 'agent-model', instructions, input, store: false }, { headers: { originator: 'codex_cli_rs', 'session-id': 'codex-session' } })
          .withResponse();
        await explain(proxy, response.headers.get('x-metaclaw-request-id')!);
        input.push({ role: 'assistant', content: [{ type: 'output_text', text: prose(turn * 2 + 1, 330), annotations: [] }] } as never);
      }
      await proxy.stop();
      const conversation = JSON.stringify({ model: 'agent-model', instructions, input }).length;
      const { stored, detail } = storedBodyChars(home);
      t.diagnostic(`stored ${stored} characters for a ${conversation}-character conversation: ${(stored / conversation).toFixed(2)}× (${detail})`);
      assert.ok(
        stored <= 4 * conversation,
        `50 turns stored in ${stored} characters: ${(stored / conversation).toFixed(1)}× the ${conversation}-character conversation (${detail})`,
      );
    });
  });

  test('with skills injected and the oldest messages trimmed (max_context_tokens), the forwarded bodies read back as sent and the session takes at most 3 times its conversation plus each distinct injected block', async (t) => {
    await inHome(async ({ home, upstream, start }) => {
      assert.equal((await runCli(['skills', 'install-starter'], { home })).code, 0);
      const proxy = await start({ config: { max_context_tokens: 9_000 } });
      const system = prose(2_000, 20_000);
      const turns = await converse(proxy, 'skilled-session', 50, system, 200, (turn) => SKILLED_QUESTIONS[Math.floor(turn / 2) % SKILLED_QUESTIONS.length]!);
      const forwarded = upstream.modelRequests().map((request) => request.body as { messages: Array<{ content: string }> });
      assert.equal(forwarded.length, turns.length);
      assert.ok(
        forwarded.some((body, index) => body.messages.length < turns[index]!.messages.length),
        'the oldest messages were trimmed',
      );
      const blocks = new Set(forwarded.map((body) => body.messages[0]!.content.slice(system.length)).filter(Boolean));
      assert.ok(blocks.size >= 4, `skills were injected, differently as the topic changed (${blocks.size} blocks)`);
      for (const [index, turn] of turns.entries())
        assert.deepEqual(
          (await explain(proxy, turn.id)).forwarded.body,
          forwarded[index],
          `the forwarded body of ${turn.id} reads back as the upstream got it`,
        );
      await proxy.stop();
      const conversation = JSON.stringify({ model: 'agent-model', messages: turns.at(-1)!.messages }).length;
      const injected = [...blocks].reduce((sum, block) => sum + block.length, 0);
      const { stored, detail } = storedBodyChars(home);
      t.diagnostic(
        `stored ${stored} characters for a ${conversation}-character conversation and ${blocks.size} injected blocks of ${injected} characters (${detail})`,
      );
      assert.ok(stored <= 3 * conversation + injected, `stored ${stored} characters: more than 3 × ${conversation} + ${injected} (${detail})`);
    });
  });
});
