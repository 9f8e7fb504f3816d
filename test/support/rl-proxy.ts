import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import OpenAI from 'openai';
import { startProxy, tempHome, waitFor, type ProxyHandle } from './proxy.js';
import { TinkerDouble } from './tinker-double.js';
import { openAIReply, ScriptedUpstream } from './upstream.js';

/**
 * A started proxy in mode rl (or auto) against the strict Tinker learning double, for the tests of
 * RL in a running proxy: a character tokenizer the double's tiny bigram policy can speak, a scripted
 * upstream that answers the judge, and the helpers those tests repeat (training report, steps,
 * turns sent, samples waited for).
 */

/** The model every RL test serves: the double supports only it. */
export const RL_MODEL = 'tiny/chars';

/** One token per printable ASCII character, plus Qwen's chat markers (ids 0 to 2). */
const CHAR_TOKENS = ['<|im_start|>', '<|im_end|>', '<unk>', '\n', '\t', ...Array.from({ length: 95 }, (_, index) => String.fromCharCode(32 + index))];
const SPECIALS = 3;

/** The character tokenizer's vocabulary size (100): the double's vocabulary. */
export const CHAR_VOCAB_SIZE = CHAR_TOKENS.length;

/**
 * Writes a tokenizer the double's tiny bigram policy can speak into `folder`: one token per
 * printable ASCII character, plus Qwen's chat markers, with a ChatML template. Its 100 ids are the
 * double's vocabulary.
 */
export function writeCharTokenizer(folder: string): void {
  mkdirSync(folder, { recursive: true });
  const vocab = Object.fromEntries(CHAR_TOKENS.map((token, id) => [token, id]));
  const added = CHAR_TOKENS.slice(0, SPECIALS).map((content, id) => ({
    id,
    content,
    single_word: false,
    lstrip: false,
    rstrip: false,
    normalized: false,
    special: true,
  }));
  writeFileSync(
    join(folder, 'tokenizer.json'),
    JSON.stringify({
      version: '1.0',
      truncation: null,
      padding: null,
      added_tokens: added,
      normalizer: null,
      pre_tokenizer: { type: 'Split', pattern: { Regex: '[\\s\\S]' }, behavior: 'Isolated', invert: false },
      post_processor: null,
      decoder: { type: 'Fuse' },
      model: { type: 'WordLevel', vocab, unk_token: '<unk>' },
    }),
  );
  writeFileSync(
    join(folder, 'tokenizer_config.json'),
    JSON.stringify({
      eos_token: '<|im_end|>',
      bos_token: null,
      chat_template:
        '{% for message in messages %}<|im_start|>{{ message.role }}\n{{ message.content }}<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}',
    }),
  );
}

export interface TrainingReport {
  state: string;
  error: string | null;
  served: { step: number; samplerPath: string; pinned: boolean } | null;
  trigger: string;
  ready_samples: number;
  retry_at?: string | null;
  /** the failed openings in a row: the last reason, since when, how many, the next try */
  opening_failed?: { error: string; since: string; attempts: number; retry_at: string } | null;
  opd?: unknown;
}

export interface StepRow {
  step: number;
  status: string;
  loss: number | null;
  reward: number | null;
  samples: number;
  finished_at: string | null;
}

/** The training engine's report in `GET /status`. */
export async function training(proxy: ProxyHandle): Promise<TrainingReport> {
  const status = (await (await fetch(`${proxy.url}/status`)).json()) as { rl: { training: TrainingReport | null } };
  assert.ok(status.rl.training, 'the proxy runs a training engine');
  return status.rl.training;
}

/** The training steps `metaclaw rl status --json` lists. */
export async function stepsOf(proxy: ProxyHandle): Promise<StepRow[]> {
  const result = await proxy.cli(['rl', 'status', '--json']);
  assert.equal(result.code, 0, result.stderr);
  return (JSON.parse(result.stdout) as { steps: StepRow[] }).steps;
}

/** The training report once the backend has finished opening (whether it opened or failed). */
export function opened(proxy: ProxyHandle): Promise<TrainingReport> {
  return waitFor(async () => {
    const current = await training(proxy);
    return current.state !== 'starting' && current;
  }, 30_000);
}

/** The training report once exactly `count` judged samples wait for a step. */
export function readySamples(proxy: ProxyHandle, count: number): Promise<TrainingReport> {
  return waitFor(
    async () => {
      const current = await training(proxy);
      return current.ready_samples === count && current;
    },
    30_000,
    200,
  );
}

/** The steps once one of them is done. */
export function stepDone(proxy: ProxyHandle, timeoutMs: number, intervalMs: number): Promise<StepRow[]> {
  return waitFor(
    async () => {
      const current = await stepsOf(proxy);
      return current.some((step) => step.status === 'done') && current;
    },
    timeoutMs,
    intervalMs,
  );
}

/** Sends one main turn a text, in order, in the OpenAI format within session `session`. */
export async function sendTurns(proxy: ProxyHandle, session: string, texts: string[], maxTokens: number): Promise<void> {
  const openai = new OpenAI({ apiKey: 'local', baseURL: `${proxy.url}/v1`, maxRetries: 0 });
  for (const content of texts)
    await openai.chat.completions.create(
      { model: RL_MODEL, messages: [{ role: 'user', content }], max_tokens: maxTokens },
      { headers: { 'x-session-id': session } },
    );
}

export interface RlProxyOptions {
  /** `rl` (the default) or `auto`. */
  mode?: 'rl' | 'auto';
  /** rl.* keys beside the backend, its key and URL and the tokenizer path. */
  rl?: Record<string, unknown>;
  /** Further config sections (scheduler, opd), written after rl. */
  config?: Record<string, unknown>;
  /** What the normal upstream answers its `call`-th request (from 1): while the policy serves, only the judge asks it. Default: votes that alternate 1, -1. */
  reply?: (call: number) => string;
  /** Leave the tokenizer folder empty (the test writes it later with `writeTokenizer`). */
  tokenizerLater?: boolean;
  /** Wait until the backend has opened, and assert that it did. */
  ready?: boolean;
  /** Further base models the double serves beside RL_MODEL (the same character vocabulary). */
  moreModels?: string[];
}

export interface RlProxy {
  home: string;
  /** The proxy running (a test that starts it again sets the new one here, for `dispose`). */
  proxy: ProxyHandle;
  double: TinkerDouble;
  upstream: ScriptedUpstream;
  /** The config written as config.yaml. */
  config: Record<string, unknown>;
  /** How many requests reached the normal upstream. */
  readonly upstreamCalls: number;
  writeTokenizer(): void;
  /** Stops everything and deletes the home (kept, and said, with KEEP_HOME set). */
  dispose(): Promise<void>;
}

/**
 * Starts the Tinker double, a scripted upstream and `metaclaw start` with an rl config against
 * both, the character tokenizer in the home (skills and memory off).
 */
export async function startRlProxy(options: RlProxyOptions = {}): Promise<RlProxy> {
  const home = tempHome();
  const tokenizerFolder = join(home, 'char-tokenizer');
  if (!options.tokenizerLater) writeCharTokenizer(tokenizerFolder);
  const double = await TinkerDouble.start({ vocabSize: CHAR_VOCAB_SIZE, supportedModels: [RL_MODEL, ...(options.moreModels ?? [])] });
  const upstream = await ScriptedUpstream.start();
  const reply = options.reply ?? ((call) => `Score: ${call % 2 === 1 ? 1 : -1}`);
  let calls = 0;
  upstream.defaultHandler = (request, response) => openAIReply({ text: reply(++calls) })(request, response);
  const config: Record<string, unknown> = {
    mode: options.mode ?? 'rl',
    llm: { api_base: `${upstream.url}/v1`, api_key: 'upstream-key', model_id: RL_MODEL },
    rl: { backend: 'tinker', api_key: double.apiKey, base_url: double.url, tokenizer_path: tokenizerFolder, ...options.rl },
    ...options.config,
    skills: { enabled: false },
    memory: { enabled: false },
  };
  const rl: RlProxy = {
    home,
    proxy: await startProxy({ home, config }),
    double,
    upstream,
    config,
    get upstreamCalls() {
      return calls;
    },
    writeTokenizer: () => writeCharTokenizer(tokenizerFolder),
    dispose: async () => {
      await rl.proxy.stop();
      await upstream.close();
      await double.close();
      if (process.env['KEEP_HOME']) console.log('home kept', home);
      else rmSync(home, { recursive: true, force: true });
    },
  };
  if (options.ready) {
    try {
      const report = await opened(rl.proxy);
      assert.equal(report.state, 'ready', report.error ?? '');
    } catch (error) {
      await rl.dispose();
      throw error;
    }
  }
  return rl;
}

/** A "training backend" that takes every connection and closes it at once, before any answer; `connections` holds when each came. */
export interface DroppingBackend {
  url: string;
  connections: number[];
  close(): Promise<void>;
}

export async function startDroppingBackend(): Promise<DroppingBackend> {
  const connections: number[] = [];
  const server = createServer((socket) => {
    connections.push(Date.now());
    socket.destroy();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    connections,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/**
 * What a proxy or node whose backend drops every connection shows and does (`read`: its training
 * report; `cli`: its `metaclaw`): within seconds `/status` and `rl status` say why it failed and
 * when it tries again; nothing is sent in the 5 s after the first failure nor in the 10 s after the
 * second; the log (`logFile`) says it once, not at every try.
 */
export async function expectReopeningLater(
  backend: DroppingBackend,
  read: () => Promise<TrainingReport>,
  cli: ProxyHandle['cli'],
  logFile: string,
): Promise<void> {
  const failure = new RegExp(`^Tinker is unreachable at ${backend.url.replaceAll('.', '\\.')} \\(/api/v1/create_session\\): `);
  // An opening gives up after 10 s; the margin is for a loaded CI machine (one run under load took over 30 s to
  // show the first failure), not for the behaviour: the old code stayed invisible for 5 minutes.
  const failedAfter = (retryAfter: number) =>
    waitFor(
      async () => {
        const report = await read();
        return report.state === 'failed' && Date.parse(report.retry_at ?? '') > retryAfter && report;
      },
      60_000,
      100,
    );
  const first = await failedAfter(0);
  assert.match(first.error ?? '', failure);
  assert.deepEqual(first.opening_failed, { error: first.error, since: first.opening_failed?.since, attempts: 1, retry_at: first.retry_at });
  const status = await cli(['rl', 'status']);
  assert.match(status.stdout, /FAILED: Tinker is unreachable at .*; trying again at .* \(1 failed try since /);

  // The second opening fails too: its retry time moves on, the tries are counted from the first failure.
  const firstRetry = Date.parse(first.retry_at!);
  const second = await failedAfter(firstRetry);
  assert.deepEqual(second.opening_failed, { error: second.error, since: first.opening_failed?.since, attempts: 2, retry_at: second.retry_at });
  const secondRetry = Date.parse(second.retry_at!);
  const { connections } = backend;
  await waitFor(() => connections.some((at) => at >= secondRetry - 100), 15_000, 50);
  const between = (from: number, to: number) => connections.filter((at) => at > from + 200 && at < to - 200);
  assert.deepEqual(between(firstRetry - 5_000, firstRetry), [], 'nothing is sent in the 5 s after the first failure');
  assert.deepEqual(between(secondRetry - 10_000, secondRetry), [], 'nothing is sent in the 10 s after the second failure');
  assert.ok(between(firstRetry - 200, secondRetry - 10_000).length > 0, 'the second opening ran between them');

  const said = readFileSync(logFile, 'utf8')
    .split('\n')
    .filter((line) => line.includes('the training backend could not be opened'));
  assert.equal(said.length, 1, `the same failure is logged once, not at every try:\n${said.join('\n')}`);
  assert.match((JSON.parse(said[0]!) as { err: string }).err, failure);
}
