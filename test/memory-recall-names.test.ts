import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import OpenAI from 'openai';
import { startScriptedProxy, type ScriptedProxy } from './support/scripted-proxy.js';

const DAY = 86_400_000;

describe('memory recall across languages through proper nouns and kinship words (no extractor)', () => {
  let started: ScriptedProxy | undefined;
  before(async () => {
    started = await startScriptedProxy({ afterHousekeeping: true, config: { memory: { auto_extract: false }, skills: { auto_evolve: false } } });
  });
  after(() => started?.close());

  /** A memory API call in `scope`, through the proxy's HTTP interface. */
  async function post(scope: string, path: string, body: unknown): Promise<any> {
    const response = await fetch(`${started!.proxy.url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-memory-scope': scope },
      body: JSON.stringify(body),
    });
    assert.equal(response.status, 200, await response.clone().text());
    return response.json();
  }

  /**
   * Each case's setup and first check: remembers `turns` in `scope` (the answer first, the oldest),
   * then asks `query` through the memory search API and asserts the answer comes first.
   */
  async function assertRecalledFirst(scope: string, query: string, turns: ReadonlyArray<[content: string, daysAgo: number]>): Promise<void> {
    const now = Date.now();
    for (const [index, [content, daysAgo]] of turns.entries())
      await post(scope, '/v1/memory/ingest', { session_id: `${scope}-${index}`, turns: [{ role: 'user', content, timestamp: now - daysAgo * DAY }] });
    const results = (await post(scope, '/v1/memory/search', { query, limit: 5 })).results as Array<{ content: string }>;
    assert.equal(results[0]?.content, turns[0]![0]);
  }

  test('a Chinese question recalls first, and gets injected, the English memory it shares only a city name with (墨尔本: Melbourne)', async () => {
    const answer = 'Jonas lives in Melbourne now, he moved there for a nursing job.';
    // The newer memories share the question's other word ("live"): only the city tells them apart.
    await assertRecalledFirst('names-zh', '谁住在墨尔本？', [
      [answer, 60],
      ['My sister lives in Toronto with her two kids.', 2],
      ['We live close to the river, a ten-minute walk from the station.', 1],
    ]);

    const client = new OpenAI({ baseURL: `${started!.proxy.url}/v1`, apiKey: 'x', maxRetries: 0 });
    await client.chat.completions.create(
      { model: 'm', messages: [{ role: 'user', content: '谁住在墨尔本？' }] },
      { headers: { 'X-Session-Id': 'ask-melbourne', 'X-Memory-Scope': 'names-zh' } },
    );
    const forwarded = JSON.stringify(started!.upstream.modelRequests().at(-1)!.body.messages);
    assert.match(forwarded, /Jonas lives in Melbourne/, 'the memory is injected into the request the upstream gets');
  });

  test('a Chinese question recalls first the English memory it shares only a city name with that CC-CEDICT writes as a pointer to its full form (杭州: "see 杭州市", Hangzhou)', async () => {
    await assertRecalledFirst('names-pointer', '谁住在杭州？', [
      ['My parents live in Hangzhou, they retired there last year.', 60],
      ['My sister lives in Toronto with her two kids.', 2],
      ['We live close to the river, a ten-minute walk from the station.', 1],
    ]);
  });

  test('an English question recalls first the Chinese memory it shares only an exam name with (IELTS: 雅思)', async () => {
    await assertRecalledFirst('names-en', 'What score did I get in IELTS?', [
      ['上个月考了雅思，总分七分，写作只有六分。', 40],
      ['驾照考试下周六考科目二，有点紧张。', 3],
      ['女儿期末考试数学考了满分。', 1],
    ]);
  });

  /** Kinship words the segmenter glues to a pronoun (我妈) or the glossary glosses thinly alone (妈: "ma, mom"), both directions. */
  const kinship: ReadonlyArray<{ name: string; scope: string; query: string; answer: string; others: [string, string] }> = [
    {
      name: 'an English question about "my mum" recalls first the Chinese memory that writes her glued to a pronoun (我妈)',
      scope: 'kinship-en',
      query: 'What does my mum cook on weekends?',
      answer: '我妈周末总是做饺子，一次包一百个。',
      others: ['我哥周末总是做红烧肉。', '我爸周末总是钓鱼。'],
    },
    {
      name: 'a Chinese question about 我妈 recalls first the English memory about "my mum"',
      scope: 'kinship-zh',
      query: '我妈周末做什么菜？',
      answer: 'My mum always makes dumplings on weekends, a hundred at a time.',
      others: ['My brother always makes braised pork on weekends.', 'My dad goes fishing every weekend.'],
    },
  ];
  for (const { name, scope, query, answer, others } of kinship)
    test(name, () =>
      assertRecalledFirst(scope, query, [
        [answer, 40],
        [others[0], 3],
        [others[1], 1],
      ]),
    );
});
