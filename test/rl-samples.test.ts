import assert from 'node:assert/strict';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { z } from 'zod';
import { loadConfig } from '../src/config/index.js';
import { ConversationStore } from '../src/conversation/index.js';
import { JobQueue } from '../src/learning/index.js';
import { majorityOf, parseScore, RlBuffer, type PolicyTurn } from '../src/rl/index.js';
import { recordingListeners, recordingSettings } from '../src/runtime/recording.js';
import { SkillHistory } from '../src/skills/index.js';
import { openDatabase } from '../src/store/index.js';
import { runCli, tempHome } from './support/proxy.js';
import { finishedTurn } from './support/turns.js';

describe('judge answers are read robustly', () => {
  test('the score is the last "Score: N", else \\boxed{N}, else JSON, else the last number; out-of-range or missing is no vote', () => {
    assert.equal(parseScore('Reasoning… Score: 1'), 1);
    assert.equal(parseScore('First I thought Score: 1, but on reflection\nScore: -1'), -1);
    assert.equal(parseScore('**Score:** 0'), 0);
    assert.equal(parseScore('score = +1'), 1);
    assert.equal(parseScore('The final answer is \\boxed{-1}.'), -1);
    assert.equal(parseScore('{"score": 1, "why": "complete"}'), 1);
    assert.equal(parseScore('```json\n{"score": -1}\n```'), -1);
    assert.equal(parseScore('I would rate this a 1'), 1);
    assert.equal(parseScore('Score: 7'), undefined, 'a score outside {-1, 0, 1} is a bad answer');
    assert.equal(parseScore('Looks fine to me.'), undefined);
  });

  test('the reward is the value more than half of all votes agree on; a split or failed votes give none', () => {
    assert.equal(majorityOf([1, 1, -1]), 1);
    assert.equal(majorityOf([0, -1, -1]), -1);
    assert.equal(majorityOf([1, -1, 0]), null, 'three-way split');
    assert.equal(majorityOf([1, -1]), null, 'tie');
    assert.equal(majorityOf([1, null, null]), null, 'one vote of three is no majority');
    assert.equal(majorityOf([1, 1, null]), 1);
    assert.equal(majorityOf([null, null, null]), null);
  });
});

const PROMPT_TOKENS = [151644, 872, 198, 9707, 151645, 198, 151644, 77091, 198];
const RESPONSE_TOKENS = [9707, 0, 151645];
const RESPONSE_LOGPROBS = [-0.125, -2.3456789, -0.0001];

function policyTurn(turnId: string, sessionId: string): PolicyTurn {
  return {
    turnId,
    sessionId,
    promptTokens: PROMPT_TOKENS,
    response: { tokens: RESPONSE_TOKENS, logprobs: RESPONSE_LOGPROBS, stopReason: 'stop' },
    policyVersion: 'step-3',
    trainable: true,
  };
}

const tensor = (dtype: string) => z.object({ data: z.array(z.number()), dtype: z.literal(dtype), shape: z.tuple([z.number().int()]) }).strict();
const datumLine = z
  .object({
    model_input: z.object({ chunks: z.array(z.object({ type: z.literal('encoded_text'), tokens: z.array(z.number().int()) }).strict()).length(1) }).strict(),
    loss_fn_inputs: z.object({ target_tokens: tensor('int64'), logprobs: tensor('float32'), advantages: tensor('float32') }).strict(),
  })
  .strict();

describe('the sample buffer keeps what the policy sampled', () => {
  test('turns served from the policy keep their exact token ids and logprobs, export as Tinker datums, and leave training when the skill generation advances', async () => {
    const home = tempHome();
    writeFileSync(join(home, 'config.yaml'), 'rl:\n  enabled: true\nmemory:\n  enabled: false\n', { mode: 0o600 });
    const config = loadConfig({ env: { METACLAW_HOME: home } });
    const db = openDatabase(config.paths.database);
    try {
      const queue = new JobQueue(db, 'test', 3);
      const conversation = new ConversationStore(db);
      for (const listener of recordingListeners(db, queue, recordingSettings(config), { enqueued: () => {}, failed: (_, error) => assert.fail(String(error)) }))
        conversation.addListener(listener);
      await conversation.recordTurn(finishedTurn('turn-1', 'policy-session', 'Say hello', policyTurn('turn-1', 'policy-session')));
      await conversation.recordTurn(finishedTurn('turn-2', 'policy-session', 'Again, louder', policyTurn('turn-2', 'policy-session')));
      await conversation.recordTurn(finishedTurn('turn-3', 'policy-session', 'And from the normal upstream')); // no policy: text only
      conversation.endSession('policy-session', 'manual');
      const judgeJobs = db.prepare<[], { payload: string }>("SELECT payload FROM jobs WHERE kind = 'rl.judge' ORDER BY id").all();
      assert.deepEqual(
        judgeJobs.map((job) => JSON.parse(job.payload).turnId),
        ['turn-1', 'turn-2', 'turn-3'],
        'one judge job per sample: each at the next turn, the last at session end',
      );

      const buffer = new RlBuffer(db);
      assert.equal(buffer.get('turn-1')!.next_turn_id, 'turn-2');
      assert.equal(buffer.get('turn-3')!.next_turn_id, null);
      const verdict = (reward: 1 | -1) => ({ state: 'scored' as const, reward, votes: [reward, reward, reward], model: 'judge', error: null });
      buffer.saveVerdict('turn-1', verdict(1));
      buffer.saveVerdict('turn-2', verdict(-1));
      buffer.saveVerdict('turn-3', verdict(1));

      const trainable = buffer.trainable(0, 10);
      assert.deepEqual(
        trainable.map((sample) => sample.turnId),
        ['turn-1', 'turn-2'],
        'the text-only sample is not trainable',
      );
      assert.deepEqual(trainable[0]!.promptTokens, PROMPT_TOKENS);
      assert.deepEqual(trainable[0]!.responseTokens, RESPONSE_TOKENS, 'the sampled ids, never re-tokenized');
      assert.deepEqual(trainable[0]!.responseLogprobs, RESPONSE_LOGPROBS.map(Math.fround));
      assert.equal(trainable[0]!.policyVersion, 'step-3');
      assert.equal(trainable[0]!.skillGeneration, 0);

      const out = join(home, 'datums.jsonl');
      const exported = await runCli(['rl', 'export', '--format', 'datum', '--out', out], { home });
      assert.equal(exported.code, 0, exported.stderr);
      assert.match(exported.stderr, /exported 2 datum line\(s\) from 3 scored sample\(s\).*1 no token ids/);
      const lines = readFileSync(out, 'utf8')
        .trimEnd()
        .split('\n')
        .map((line) => datumLine.parse(JSON.parse(line)));
      const all = [...PROMPT_TOKENS, ...RESPONSE_TOKENS];
      const length = all.length - 1;
      for (const [index, line] of lines.entries()) {
        const reward = index === 0 ? 1 : -1;
        assert.deepEqual(line.model_input.chunks[0]!.tokens, all.slice(0, -1));
        assert.deepEqual(line.loss_fn_inputs.target_tokens.data, all.slice(1), 'targets are the input shifted by one');
        for (const tensorData of Object.values(line.loss_fn_inputs)) {
          assert.equal(tensorData.data.length, length);
          assert.deepEqual(tensorData.shape, [length]);
        }
        const promptPositions = PROMPT_TOKENS.length - 1;
        assert.deepEqual(line.loss_fn_inputs.advantages.data, [...new Array<number>(promptPositions).fill(0), ...RESPONSE_TOKENS.map(() => reward)]);
        assert.deepEqual(line.loss_fn_inputs.logprobs.data, [...new Array<number>(promptPositions).fill(0), ...RESPONSE_LOGPROBS.map(Math.fround)]);
      }

      // The library changes (another process, the CLI): the live generation decides, whoever changed it.
      new SkillHistory(db, config.paths.skillsDir).bumpGeneration();
      assert.deepEqual(buffer.trainable(1, 10), [], 'samples of generation 0 never reach a step of generation 1');
      assert.ok(buffer.get('turn-1')!.dropped_at !== null, 'dropped, and kept as history');
      await conversation.recordTurn(finishedTurn('turn-4', 'next-session', 'Hello under the new skills', policyTurn('turn-4', 'next-session')));
      buffer.saveVerdict('turn-4', verdict(1));
      assert.equal(buffer.get('turn-4')!.skill_generation, 1);
      assert.deepEqual(
        buffer.trainable(1, 10).map((sample) => sample.turnId),
        ['turn-4'],
      );
      buffer.markTrained(['turn-4'], 1);
      assert.deepEqual(buffer.trainable(1, 10), []);
      const report = JSON.parse((await runCli(['rl', 'status', '--json'], { home })).stdout);
      assert.deepEqual(report.buffer.by_state, { waiting: 0, queued: 0, scored: 0, tie: 0, failed: 0, dropped: 3, trained: 1, set_aside: 0 });
      assert.deepEqual(
        report.buffer.by_generation.map((row: { generation: number; dropped: number }) => [row.generation, row.dropped]),
        [
          [0, 3],
          [1, 0],
        ],
      );

      // Forgetting a text from a session also drops the token ids that encode it.
      conversation.scrubTexts(['turn-4'], ['Hello under the new skills']);
      assert.equal(buffer.get('turn-4')!.prompt_tokens, null);
      assert.ok(buffer.get('turn-1')!.prompt_tokens !== null, 'other sessions keep theirs');
    } finally {
      db.close();
      rmSync(home, { recursive: true, force: true });
    }
  });
});
