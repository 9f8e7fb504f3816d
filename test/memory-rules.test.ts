import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import OpenAI from 'openai';
import { isExtractorCall, learningAwareUpstream, session, userText } from './support/evolver.js';
import { startProxy, waitFor, type ProxyHandle } from './support/proxy.js';
import { openAIReply, ScriptedUpstream } from './support/upstream.js';

/**
 * Standing rules learned from what users say, through a started proxy with no extractor (the
 * deterministic path every user has): one-off requests stay out of the core block, per-file copies
 * of a rule become one rule, the core block chooses by relevance when over budget, a replaced rule
 * never comes back, and Chinese corrections work as English ones do.
 */

interface CoreUnit {
  id: string;
  content: string;
  source: { turn_ids: string[] };
}

async function core(proxy: ProxyHandle): Promise<CoreUnit[]> {
  return JSON.parse((await proxy.cli(['memory', 'core', '--json'])).stdout) as CoreUnit[];
}

/** Raw turns stored so far: the record-turn jobs that hold the rule detector have run for them. */
async function rawTurns(proxy: ProxyHandle): Promise<number> {
  const stats = (await (await fetch(`${proxy.url}/v1/memory/stats`)).json()) as { scopes: Array<{ by_origin: Record<string, number> }> };
  return stats.scopes[0]?.by_origin['raw_turn'] ?? 0;
}

/** Says `messages` in one session, waits until every turn of it is stored (the detector has run), and returns the core block's texts. */
async function coreAfterSaying(proxy: ProxyHandle, client: OpenAI, sessionId: string, messages: readonly string[]): Promise<string[]> {
  await session(client, sessionId, [...messages], 'Agent.');
  await waitFor(async () => (await rawTurns(proxy)) === messages.length * 2, 15_000);
  return (await core(proxy)).map((unit) => unit.content);
}

/** The standing-instructions block of the last request the agent's upstream received ('' when none). */
function standingInstructions(upstream: ScriptedUpstream): string {
  const system = upstream.modelRequests().at(-1)!.body.messages[0].content as string;
  return /## Standing Instructions[\s\S]*?<\/memory-data>/.exec(system)?.[0] ?? '';
}

function lastSystem(upstream: ScriptedUpstream): string {
  return upstream.modelRequests().at(-1)!.body.messages[0].content as string;
}

async function ask(client: OpenAI, sessionId: string, text: string): Promise<void> {
  await client.chat.completions.create(
    {
      model: 'm',
      messages: [
        { role: 'system', content: 'Agent.' },
        { role: 'user', content: text },
      ],
    },
    { headers: { 'X-Session-Id': sessionId } },
  );
}

describe('standing rules learned from corrections (no extractor)', () => {
  let upstream: ScriptedUpstream;
  before(async () => {
    upstream = await ScriptedUpstream.start();
    // Answers differ, so each is stored (a session keeps one copy of a repeated text).
    let answers = 0;
    upstream.defaultHandler = (request, response) => openAIReply({ text: `Done (step ${++answers}).` })(request, response);
  });
  after(async () => upstream.close());

  async function withProxy(run: (proxy: ProxyHandle, client: OpenAI) => Promise<void>, memory: Record<string, unknown> = {}): Promise<void> {
    const proxy = await startProxy({
      config: { llm: { api_base: `${upstream.url}/v1`, api_key: 'k' }, memory: { auto_extract: false, ...memory }, skills: { auto_evolve: false } },
    });
    try {
      await run(proxy, new OpenAI({ baseURL: `${proxy.url}/v1`, apiKey: 'x', maxRetries: 0 }));
    } finally {
      await proxy.dispose();
    }
  }

  test('a one-off request never becomes a standing rule, however it is worded, in English or Chinese', async () => {
    await withProxy(async (proxy, client) => {
      const requests = [
        'Please write a Python helper class for the project API and save it to day26/.',
        'Today we need to modify four files: app.py, db.py, api.py and cli.py.',
        'This time, skip the tests.',
        'No — for this release only, put the changelog in docs/ instead.',
        'Make all the buttons on the settings page rounded.',
        'All prices on the receipt screen need to be right-aligned.',
        '今天先不用写文档。',
        '把 screenshots 文件夹里的所有图片都压缩一下。',
        // A feature asked for with "when" ("的时候") is work on the product, not a rule for the assistant.
        '还车失败的时候，要让用户知道是哪个桩出了问题。',
      ];
      assert.deepEqual(await coreAfterSaying(proxy, client, 'one-offs', requests), []);
      await ask(client, 'later', 'Draft the release notes');
      assert.doesNotMatch(lastSystem(upstream), /Standing Instructions/);
    });
  });

  test('what someone did or does, told with "always", "never" or "总是", is no standing rule; the same words said as an instruction or a convention are', async () => {
    await withProxy(async (proxy, client) => {
      const told = [
        'My brother never calls on Sundays, which drives our mother mad.',
        "I've never been to Japan, but Lena has been twice.",
        'The neighbour’s dog always barks when the bin lorry comes.',
        'She always orders the same noodles at that place.',
        '我妈退休以后天天去公园打太极，说要活到一百岁。',
        '楼下的猫总是趴在我们的车顶上。',
      ];
      const instructions = [
        'Always answer in British English.',
        'Exported report files always get the date first, like 20261204-sales.csv.',
        '每次改完配置，都提醒我重启服务。',
      ];
      assert.deepEqual((await coreAfterSaying(proxy, client, 'told-and-asked', [...told, ...instructions])).sort(), [...instructions].sort());
    });
  });

  test('an order after a recurring point in the work ("Before every commit, run lint first", "After each merge, delete the branch") is a standing rule; the same opening before what someone does is not', async () => {
    await withProxy(async (proxy, client) => {
      const told = [
        'Before every flight, I have to take a pill for the nerves.',
        'Before every meeting, my boss checks the agenda twice.',
        'After each run, the cache clears itself.',
      ];
      const orders = ['Before every commit, run lint first.', 'After each merge, delete the branch.', 'Before any release, always update the changelog.'];
      assert.deepEqual((await coreAfterSaying(proxy, client, 'every-point', [...told, ...orders])).sort(), [...orders].sort());
    });
  });

  test('eight per-file backup corrections become one rule, in the user’s words with the file as a placeholder, citing all eight', async () => {
    await withProxy(async (proxy, client) => {
      const files = [
        'day11/deploy.sh',
        'day12/nginx.conf',
        'day13/app.py',
        'day14/settings.yaml',
        'day15/crontab.txt',
        'day16/backup.sh',
        'day17/Makefile.am',
        'day18/compose.yml',
      ];
      for (const file of files)
        await session(
          client,
          `edit-${file}`,
          [`Update ${file} to use the new registry.`, `No — you overwrote it. Before modifying ${file}, you must first create ${file}.bak.`],
          'Agent.',
        );
      await waitFor(async () => (await rawTurns(proxy)) === files.length * 4, 20_000);
      const rules = await core(proxy);
      assert.deepEqual(
        rules.map((unit) => unit.content),
        ['Before modifying <file>, you must first create <file>.bak.'],
      );
      assert.equal(rules[0]!.source.turn_ids.length, 8, 'linked to every correction it came from');

      await ask(client, 'later', 'Add gzip to the web server config');
      assert.match(standingInstructions(upstream), /Before modifying <file>, you must first create <file>\.bak\./);
    });
  });

  test('per-file copies after the general rule join it, in English or Chinese: its general wording stays, and it cites them', async () => {
    await withProxy(async (proxy, client) => {
      await session(
        client,
        'taught',
        ['Update deploy.sh to use the new registry.', 'No — you overwrote deploy.sh. Before you modify any file, always make a .bak copy first.'],
        'Agent.',
      );
      for (const file of ['web/nginx.conf', 'src/app.py', 'ops/cron.txt'])
        await session(client, `copy-${file}`, [`Tidy up ${file}.`, `You forgot again: before modifying ${file}, create ${file}.bak.`], 'Agent.');
      for (const file of ['ops/backup.sh', 'web/app.js'])
        await session(client, `copy-${file}`, [`整理一下 ${file}。`, `你又忘了：改 ${file} 之前要先备份成 ${file}.bak。`], 'Agent.');
      await waitFor(async () => (await rawTurns(proxy)) === 24, 20_000);
      const rules = await core(proxy);
      assert.deepEqual(
        rules.map((unit) => unit.content),
        ['Before you modify any file, always make a .bak copy first.'],
      );
      assert.equal(rules[0]!.source.turn_ids.length, 6);
    });
  });

  test('over its budget, the core block shows the rule relevant to the request, not a more recent irrelevant one', async () => {
    // 95 tokens: the block's frame and one of the two rules
    await withProxy(
      async (proxy, client) => {
        await ask(client, 'invoices', 'From now on, every invoice PDF you export must have the customer number in its file name.');
        await waitFor(async () => (await core(proxy)).length === 1, 15_000);
        await ask(client, 'commits', 'From now on, always write commit messages in the imperative mood.');
        await waitFor(async () => (await core(proxy)).length === 2, 15_000);

        await ask(client, 'task-1', 'Export the March invoice PDFs for the Lisbon customers.');
        const invoices = standingInstructions(upstream);
        assert.match(invoices, /invoice PDF you export/);
        assert.doesNotMatch(invoices, /commit messages/, 'the newer rule did not fit and is not about this request');

        await ask(client, 'task-2', 'Commit the changes to the billing module.');
        const commits = standingInstructions(upstream);
        assert.match(commits, /commit messages in the imperative mood/);
        assert.doesNotMatch(commits, /invoice PDF/);
      },
      { core_max_tokens: 95 },
    );
  });

  test('a superseded rule never returns: not in the core block, not recalled from the turn that taught it, not brought back by an older conversation', async () => {
    await withProxy(async (proxy, client) => {
      await ask(client, 'first', 'From now on, write every timestamp in reports as YYYY-MM-DD HH:mm in local time.');
      await waitFor(async () => (await core(proxy)).length === 1, 15_000);
      await session(
        client,
        'second',
        ['Write the weekly uptime report.', 'No — change of plan: from now on every timestamp in reports is ISO 8601 in UTC, like 2026-10-05T09:00:00Z.'],
        'Agent.',
      );
      await waitFor(async () => (await core(proxy))[0]?.content.includes('ISO 8601'), 15_000);
      assert.equal((await core(proxy)).length, 1);

      await ask(client, 'third', 'Which timestamp format do reports use: YYYY-MM-DD HH:mm in local time?');
      const system = lastSystem(upstream);
      assert.match(system, /ISO 8601 in UTC/);
      assert.doesNotMatch(system, /YYYY-MM-DD HH:mm in local time\./, 'the replaced rule is neither in the core block nor recalled');

      // An older conversation imported later states the old rule again: it does not replace the newer one.
      const imported = await fetch(`${proxy.url}/v1/memory/ingest`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          session_id: 'archive',
          turns: [
            { role: 'user', content: 'From now on, write every timestamp in reports as YYYY-MM-DD HH:mm in local time.', timestamp: '2020-01-06T09:00:00Z' },
          ],
        }),
      });
      assert.equal(imported.status, 200);
      assert.deepEqual(
        (await core(proxy)).map((unit) => unit.content),
        ['No — change of plan: from now on every timestamp in reports is ISO 8601 in UTC, like 2026-10-05T09:00:00Z.'],
      );
    });
  });

  test('a rule replaced in another language, sharing no word with it, is superseded (English by Chinese and Chinese by English): never shown before it is taught, nor after it is replaced', async () => {
    await withProxy(async (proxy, client) => {
      await ask(client, 'rounding', 'Going forward, round every currency amount in the reports to whole dollars.');
      await waitFor(async () => (await core(proxy)).length === 1, 15_000);
      await ask(client, 'report-1', 'Write the March revenue report with the amount per store.');
      assert.match(standingInstructions(upstream), /whole dollars/);
      assert.doesNotMatch(lastSystem(upstream), /两位小数/, 'a rule is not shown before it is taught');

      await ask(client, 'decimals', '金额的规则改一下：以后报告里的金额保留两位小数，不要再取整了。');
      await waitFor(async () => (await core(proxy)).some((unit) => unit.content.includes('两位小数')), 15_000);
      assert.deepEqual(
        (await core(proxy)).map((unit) => unit.content),
        ['金额的规则改一下：以后报告里的金额保留两位小数，不要再取整了。'],
      );
      await ask(client, 'report-2', 'Write the April revenue report: round the amount per store the usual way, whole dollars or not?');
      assert.match(standingInstructions(upstream), /两位小数/);
      assert.doesNotMatch(lastSystem(upstream), /round every currency amount/, 'the replaced rule is neither in the core block nor recalled');

      // The reverse: a Chinese rule replaced in English; the other Chinese rule stays.
      await ask(client, 'comments', '以后所有代码注释都用中文写。');
      await ask(client, 'tests', '以后每次提交前都要先跑测试。');
      await waitFor(async () => (await core(proxy)).length === 3, 15_000);
      await ask(client, 'comments-en', 'Change of plan: from now on write all code comments in English, not Chinese.');
      await waitFor(async () => (await core(proxy)).some((unit) => unit.content.includes('in English')), 15_000);
      assert.deepEqual((await core(proxy)).map((unit) => unit.content).sort(), [
        'Change of plan: from now on write all code comments in English, not Chinese.',
        '以后每次提交前都要先跑测试。',
        '金额的规则改一下：以后报告里的金额保留两位小数，不要再取整了。',
      ]);
    });
  });

  test('a Chinese rule replaced in English without a word of change in the rule itself is superseded: the change said in a sentence of its own, a correction naming what the old rule prescribed, another tool named for the same thing, a word the glossary translates in a later sense', async () => {
    await withProxy(async (proxy, client) => {
      const contents = async () => (await core(proxy)).map((unit) => unit.content).sort();
      // Four Chinese rules, and one that stays: nothing below is about commits.
      const chinese = [
        '以后界面上的错误提示一律用 Toast 组件显示。',
        '以后写测试都用 Jest。',
        '以后所有的错误信息都要写成中文。',
        '以后每次提交前都要先跑测试。',
      ];
      for (const [index, rule] of chinese.entries()) await ask(client, `zh-${index}`, rule);
      await session(client, 'export', ['Export the March sales by store.', '不对，别导出成 Excel，我的脚本读不了。以后导出的表格一律用 CSV 格式。'], 'Agent.');
      await waitFor(async () => (await core(proxy)).length === 5, 15_000);

      // The change is said before the rule, which names neither toasts nor a change.
      await ask(
        client,
        'banner',
        'Update from the design review: toasts are no longer for errors. From now on, errors on a screen go in an inline ErrorBanner at the top of that screen.',
      );
      // "again" and the old format named around the new rule, which names another one.
      await session(
        client,
        'xlsx',
        [
          'Send Maya the March wholesale orders as a file.',
          'Maya had to convert that CSV by hand again, her finance tools only read Excel. From now on export every table as an .xlsx workbook.',
        ],
        'Agent.',
      );
      // Another tool for the same thing.
      await ask(client, 'vitest', 'From now on, write all new tests with Vitest.');
      // 错误 is "mistaken, false, wrong, error": the rule about error messages says "error".
      await ask(client, 'english', 'We dropped that: from now on every error message is written in English.');
      // A rule about something else replaces nothing.
      await ask(client, 'placement', 'From now on, keep each test file next to the module it covers.');
      await waitFor(async () => (await core(proxy)).some((unit) => unit.content.includes('next to the module')), 15_000);
      assert.deepEqual(await contents(), [
        'From now on export every table as an .xlsx workbook.',
        'From now on, errors on a screen go in an inline ErrorBanner at the top of that screen.',
        'From now on, keep each test file next to the module it covers.',
        'From now on, write all new tests with Vitest.',
        'We dropped that: from now on every error message is written in English.',
        '以后每次提交前都要先跑测试。',
      ]);

      await ask(client, 'task', 'Show an error on the map screen when the stations request times out.');
      assert.match(standingInstructions(upstream), /inline ErrorBanner/);
      assert.doesNotMatch(lastSystem(upstream), /Toast 组件/, 'the replaced rule is neither in the core block nor recalled');
    });
  });

  test('a rule said to change replaces the rule it names another thing for, not a rule in its own language that only shares words with it', async () => {
    await withProxy(async (proxy, client) => {
      await ask(client, 'jest', '以后写测试都用 Jest。');
      await ask(client, 'names', 'Always give every test you write a descriptive name.');
      await waitFor(async () => (await core(proxy)).length === 2, 15_000);
      await ask(client, 'vitest', 'Change of plan: from now on write tests with Vitest.');
      await waitFor(async () => (await core(proxy)).some((unit) => unit.content.includes('Vitest')), 15_000);
      assert.deepEqual((await core(proxy)).map((unit) => unit.content).sort(), [
        'Always give every test you write a descriptive name.',
        'Change of plan: from now on write tests with Vitest.',
      ]);
    });
  });

  test('what a correction says of the task ("你把标题改成英文了") does not make its new rule replace another one', async () => {
    await withProxy(async (proxy, client) => {
      await ask(client, 'folder', 'From now on, put every report you write in the reports folder.');
      await waitFor(async () => (await core(proxy)).length === 1, 15_000);
      await session(client, 'titles', ['Write the weekly report.', '不对，你把报告标题改成英文了。以后报告的标题都用中文。'], 'Agent.');
      await waitFor(async () => (await core(proxy)).length === 2, 15_000);
      assert.deepEqual((await core(proxy)).map((unit) => unit.content).sort(), [
        'From now on, put every report you write in the reports folder.',
        '以后报告的标题都用中文。',
      ]);
    });
  });

  test('a rule said to change in a correction replaces the rule it is about, not the one the complaint around it is about', async () => {
    await withProxy(async (proxy, client) => {
      await ask(client, 'sources', 'Every chart you make needs a source line under it.');
      await ask(client, 'decimals', '以后报告里的数字都保留一位小数。');
      await waitFor(async () => (await core(proxy)).length === 2, 15_000);
      await session(client, 'chart', ['Make the revenue chart for the report.', '不对，图表下面的来源又漏了。以后数字改成保留两位。'], 'Agent.');
      await waitFor(async () => (await core(proxy)).some((unit) => unit.content.includes('两位')), 15_000);
      assert.deepEqual((await core(proxy)).map((unit) => unit.content).sort(), [
        'Every chart you make needs a source line under it.',
        '以后数字改成保留两位。',
      ]);
    });
  });

  test('a Chinese correction ("以后所有日志时间都用 UTC") becomes a rule in its general words, without the one-off part, and reaches an English task', async () => {
    await withProxy(async (proxy, client) => {
      await session(
        client,
        'logs',
        ['帮我给部署脚本加上日志输出。', '不对，日志里用的是本地时间。这次的先手动改成 UTC，以后所有日志时间都用 UTC。', '今天先不用写文档。'],
        'Agent.',
      );
      await waitFor(async () => (await rawTurns(proxy)) === 6, 15_000);
      const rules = await core(proxy);
      assert.deepEqual(
        rules.map((unit) => unit.content),
        ['以后所有日志时间都用 UTC。'],
      );
      await ask(client, 'backup', 'Add logging to the nightly backup job');
      assert.match(standingInstructions(upstream), /以后所有日志时间都用 UTC。/);
    });
  });
});

describe('standing rules with an extractor', () => {
  test('the extractor tells one-offs from rules (a one-off is never stored), consolidates paraphrases it names into one rule that links them, and a restatement becomes a source', async () => {
    const upstream = await ScriptedUpstream.start();
    upstream.defaultHandler = learningAwareUpstream({
      extractor: (request) => {
        const prompt = userText(request);
        const idOf = (text: string) => new RegExp(`id (mem_\\w+) \\[preference, standing instruction\\] ${text}`).exec(prompt)?.[1];
        if (prompt.includes('user: Run the schema migration'))
          return JSON.stringify({
            memories: [
              { type: 'preference', content: 'Use the staging database for this migration only.', standing_instruction: true, one_off: true, turn: 1 },
            ],
          });
        if (prompt.includes('user: Your long answers'))
          return JSON.stringify({
            memories: [
              {
                type: 'preference',
                content: 'Stop writing long answers: keep every answer short.',
                standing_instruction: true,
                merges: [idOf('Keep answers short\\.'), idOf('Answer in three sentences at most\\.')],
                turn: 1,
              },
            ],
          });
        if (prompt.includes('user: Remember'))
          return JSON.stringify({
            memories: [{ action: 'noop', target_id: idOf('Stop writing long answers'), type: 'preference', content: 'Keep answers short.', turn: 1 }],
          });
        return JSON.stringify({ memories: [] });
      },
    });
    const proxy = await startProxy({
      config: { llm: { api_base: `${upstream.url}/v1`, api_key: 'k' }, memory: { flush_every_n_turns: 1 }, skills: { auto_evolve: false } },
    });
    const extractions = () => upstream.requests.filter(isExtractorCall).length;
    try {
      const client = new OpenAI({ baseURL: `${proxy.url}/v1`, apiKey: 'x', maxRetries: 0 });
      for (const content of ['Keep answers short.', 'Answer in three sentences at most.']) {
        const added = await fetch(`${proxy.url}/v1/memory`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ content, type: 'preference', core: true }),
        });
        assert.equal(added.status, 201);
      }
      const [short, sentences] = await core(proxy);

      await ask(client, 'migration', 'Run the schema migration against the staging database.');
      await waitFor(() => extractions() === 1, 15_000);
      await ask(client, 'answers', 'Your long answers are hard to read on my phone.');
      await waitFor(async () => (await core(proxy)).some((unit) => unit.content.startsWith('Stop writing long answers')), 15_000);
      const rules = await core(proxy);
      assert.deepEqual(
        rules.map((unit) => unit.content),
        ['Stop writing long answers: keep every answer short.'],
        'the one-off is not stored, the two paraphrases became one rule',
      );
      for (const old of [short!, sentences!]) {
        const replaced = (await (await fetch(`${proxy.url}/v1/memory/${old.id}`)).json()) as { status: string; superseded_by: string };
        assert.equal(replaced.status, 'superseded');
        assert.equal(replaced.superseded_by, rules[0]!.id, 'linked to the rule that consolidates it');
      }

      const sources = rules[0]!.source.turn_ids.length;
      await ask(client, 'reminder', 'Remember: short answers.');
      await waitFor(async () => (await core(proxy))[0]!.source.turn_ids.length === sources + 1, 15_000);
      assert.equal((await core(proxy)).length, 1);
    } finally {
      await proxy.dispose();
      await upstream.close();
    }
  });
});
