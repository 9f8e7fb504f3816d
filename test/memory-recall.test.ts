import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import OpenAI from 'openai';
import { isExtractorCall, learningAwareUpstream, userText } from './support/evolver.js';
import { waitFor, type ProxyHandle } from './support/proxy.js';
import { startScriptedProxy, type ScriptedProxy } from './support/scripted-proxy.js';

const DAY = 86_400_000;
/** Memory from what is ingested alone: no extractor or skill evolution calls the upstream. */
const NO_LEARNING = { memory: { auto_extract: false }, skills: { auto_evolve: false } };

async function api(proxy: ProxyHandle, path: string, body: unknown, scope = 'recall'): Promise<any> {
  const response = await fetch(`${proxy.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-memory-scope': scope },
    body: JSON.stringify(body),
  });
  assert.equal(response.status, 200, await response.clone().text());
  return response.json();
}

const search = async (proxy: ProxyHandle, query: string, scope?: string) =>
  (await api(proxy, '/v1/memory/search', { query, limit: 5 }, scope)).results as Array<{ content: string; origin: string; search_keys: string[] }>;

/** Each memory as a one-turn session of the user's, `daysAgo` days back; then what a search returns, best first. */
async function rememberThenSearch(
  proxy: ProxyHandle,
  memories: ReadonlyArray<[session: string, content: string, daysAgo: number]>,
  query: string,
  scope?: string,
) {
  const now = Date.now();
  for (const [session, content, daysAgo] of memories)
    await api(proxy, '/v1/memory/ingest', { session_id: session, turns: [{ role: 'user', content, timestamp: now - daysAgo * DAY }] }, scope);
  return (await search(proxy, query, scope)).map((result) => result.content);
}

/** The spring that "last spring" means today: this year's once it is over, else last year's. */
function lastSpring(now: Date): { start: number; end: number } {
  const year = now.getMonth() >= 5 ? now.getFullYear() : now.getFullYear() - 1;
  return { start: new Date(year, 2, 1).getTime(), end: new Date(year, 5, 1).getTime() };
}

/** A proxy without learning for the enclosing suite: started before its tests, stopped after them. */
function proxyWithoutLearning(): { readonly proxy: ProxyHandle } {
  let started: ScriptedProxy | undefined;
  before(async () => {
    started = await startScriptedProxy({ afterHousekeeping: true, config: NO_LEARNING });
  });
  after(() => started?.close());
  return {
    get proxy() {
      if (!started) throw new Error('the suite proxy is started in before()');
      return started.proxy;
    },
  };
}

describe('memory recall beyond keywords (no extractor)', () => {
  const suite = proxyWithoutLearning();

  test("a question that matches the user's turn also recalls the assistant's answer after it, which shares no word with the question", async () => {
    const now = Date.now();
    await api(suite.proxy, '/v1/memory/ingest', {
      session_id: 'db-choice',
      turns: [
        { role: 'user', content: 'Which database engine should the invoicing service store its ledger in?', timestamp: now - 20 * DAY },
        { role: 'assistant', content: 'PostgreSQL 16, with logical replication to a reporting replica.', timestamp: now - 20 * DAY + 60_000 },
      ],
    });
    await api(suite.proxy, '/v1/memory/ingest', {
      session_id: 'unrelated',
      turns: [
        { role: 'user', content: 'Draft a short note to the team about the offsite agenda.', timestamp: now - 5 * DAY },
        { role: 'assistant', content: 'Here is a note about the offsite: arrival at nine, workshops until lunch.', timestamp: now - 5 * DAY + 60_000 },
      ],
    });
    const results = await search(suite.proxy, 'which database engine for the invoicing ledger?');
    assert.ok(
      results.some((result) => result.content.startsWith('PostgreSQL 16')),
      `the answer is recalled through the question it answers: ${JSON.stringify(results.map((result) => result.content))}`,
    );
  });

  test('a question that names the kind of thing ("my dog") or a synonym ("doctor") recalls the memory that names it otherwise ("greyhound", "physician")', async () => {
    await api(suite.proxy, '/v1/memory/ingest', {
      session_id: 'kinds',
      turns: [
        { role: 'user', content: 'We adopted a retired greyhound called Pepper from the rescue centre.', timestamp: Date.now() - 30 * DAY },
        { role: 'user', content: 'My physician is Dr. Okafor at the Elm Street practice.', timestamp: Date.now() - 25 * DAY },
        { role: 'user', content: 'The name of the wifi network at the cabin is Larch.', timestamp: Date.now() - 2 * DAY },
      ],
    });
    const pet = await search(suite.proxy, "What is my dog's name?");
    assert.equal(pet[0]?.content, 'We adopted a retired greyhound called Pepper from the rescue centre.', JSON.stringify(pet.map((result) => result.content)));
    const doctor = await search(suite.proxy, 'Who is my doctor?');
    assert.equal(doctor[0]?.content, 'My physician is Dr. Okafor at the Elm Street practice.', JSON.stringify(doctor.map((result) => result.content)));
  });

  test('a question whose rare word the memory never says ("lender", "nut") recalls the memory that says a word used like it ("mortgage", "peanuts") and shares no other word with it', async () => {
    const memories: ReadonlyArray<[string, string, number]> = [
      ['house', 'Signed for the flat today: 420,000, with a mortgage from Banco Atlântico fixed for five years.', 40],
      ['allergy', 'Turns out Leo cannot eat peanuts: hives within minutes at the party.', 30],
      ['insurance', 'Our home insurance renewal came in at 310 euros.', 3],
      ['wifi', 'The wifi password at the cabin is Larch.', 2],
    ];
    const lender = await rememberThenSearch(suite.proxy, memories, 'Which lender is financing our home?', 'similar-words');
    assert.ok(lender.includes(memories[0]![1]), JSON.stringify(lender));
    const nut = await search(suite.proxy, 'Which nut makes my son ill?', 'similar-words');
    assert.equal(nut[0]?.content, memories[1]![1], JSON.stringify(nut.map((result) => result.content)));
  });

  test(`a question about the user's life recalls what the user said above the assistant's reply that echoes the question's words; one about the assistant's advice ("what did you suggest", "the tip you gave me") still recalls the reply`, async () => {
    const now = Date.now();
    await api(suite.proxy, '/v1/memory/ingest', {
      session_id: 'sister-move',
      turns: [
        { role: 'user', content: 'Big news: my sister moved to Porto in May, she found a flat near the river.', timestamp: now - 40 * DAY },
        {
          role: 'assistant',
          content: 'How exciting for your sister! Living in a new city takes time; suggest she joins a language class to meet people where she lives.',
          timestamp: now - 40 * DAY + 60_000,
        },
      ],
    });
    const life = await search(suite.proxy, 'Where does my sister live these days?');
    assert.match(life[0]?.content ?? '', /^Big news: my sister moved to Porto/, JSON.stringify(life.map((result) => result.content)));
    const advice = await search(suite.proxy, 'What did you suggest my sister do to meet people in her new city?');
    assert.match(advice[0]?.content ?? '', /^How exciting for your sister/, JSON.stringify(advice.map((result) => result.content)));
    const tip = await search(suite.proxy, 'Remind me of the language class tip you gave me for my sister.');
    assert.match(tip[0]?.content ?? '', /^How exciting for your sister/, JSON.stringify(tip.map((result) => result.content)));
  });

  test('"what did I buy last spring" recalls a purchase told in spring over a later one', async () => {
    const spring = lastSpring(new Date());
    const inSpring = spring.start + 40 * DAY;
    await api(suite.proxy, '/v1/memory/ingest', {
      session_id: 'spring-purchase',
      turns: [{ role: 'user', content: 'I finally bought a used sea kayak at the harbour sale.', timestamp: inSpring }],
    });
    await api(suite.proxy, '/v1/memory/ingest', {
      session_id: 'later-purchase',
      turns: [
        { role: 'user', content: 'I finally bought a used road bike at the flea market.', timestamp: Math.max(spring.end + 20 * DAY, Date.now() - 3 * DAY) },
      ],
    });
    const results = await search(suite.proxy, 'What did I buy last spring?');
    assert.equal(results[0]?.content, 'I finally bought a used sea kayak at the harbour sale.', JSON.stringify(results.map((result) => result.content)));
  });

  test('of two memories that match a question equally, the one sharing words with its best match ranks first (pseudo-relevance feedback)', async () => {
    const now = Date.now();
    const remember = (session: string, content: string, daysAgo: number) =>
      api(suite.proxy, '/v1/memory/ingest', { session_id: session, turns: [{ role: 'user', content, timestamp: now - daysAgo * DAY }] }, 'feedback');
    await remember('bridge', 'Marek plays bass in the Lumen Quartet.', 40);
    await remember('target', 'The Lumen Quartet tour starts in Lisbon in May.', 30);
    // As close to the question by its words, and newer: without feedback it ranks above the target.
    await remember('decoy', 'The cycling tour passes the cabin in July.', 20);
    const results = (await api(suite.proxy, '/v1/memory/search', { query: 'Which tour is Marek on?', limit: 5 }, 'feedback')).results as Array<{
      content: string;
    }>;
    const contents = results.map((result) => result.content);
    const target = contents.indexOf('The Lumen Quartet tour starts in Lisbon in May.');
    const decoy = contents.indexOf('The cycling tour passes the cabin in July.');
    assert.ok(target >= 0 && (decoy < 0 || target < decoy), `the tour Marek's band is on ranks above the other tour: ${JSON.stringify(contents)}`);
  });

  test('a question that names a time takes its feedback from the best match in that time: "Where did I travel for work last spring?" recalls "Greetings from Sapporo!" after "I fly to Sapporo", not a newer spring turn', async () => {
    const spring = lastSpring(new Date());
    const remember = (session: string, content: string, timestamp: number) =>
      api(suite.proxy, '/v1/memory/ingest', { session_id: session, turns: [{ role: 'user', content, timestamp }] }, 'window-feedback');
    await remember('plan', 'Travel plans: I fly to Sapporo on Friday for the snow festival.', spring.start + 20 * DAY);
    await remember('trip', 'Greetings from Sapporo! The canal at night was stunning.', spring.start + 25 * DAY);
    await remember('filler', 'Bought new running shoes at the mall.', spring.start + 60 * DAY);
    // Better first-pass matches of the question, after the spring: they lent their words, and the trip gained nothing.
    const after = spring.end + (Date.now() - spring.end) / 2;
    for (const [index, city] of ['Porto', 'Madrid', 'Lyon'].entries())
      await remember(`work-${index}`, `Work travel again: the ${city} client workshop with Anna.`, after + index * 60_000);
    const results = (await api(suite.proxy, '/v1/memory/search', { query: 'Where did I travel for work last spring?', limit: 6 }, 'window-feedback'))
      .results as Array<{ content: string }>;
    const contents = results.map((result) => result.content);
    const trip = contents.indexOf('Greetings from Sapporo! The canal at night was stunning.');
    const filler = contents.indexOf('Bought new running shoes at the mall.');
    assert.ok(trip >= 0 && (filler < 0 || trip < filler), `the turn from the trip ranks above the unrelated spring turn: ${JSON.stringify(contents)}`);
  });

  test('a query word in another form finds its own forms only: "fly" finds "flew", not "fled"; "monthly" finds "a month"', async () => {
    const cases: Array<{ memories: Array<[string, string, number]>; query: string; first: string }> = [
      {
        // The irregular verbs' table once ran the last verb of a line into the first of the next: "fly" also searched "fled".
        memories: [
          ['trip', 'We flew to Porto for the long weekend.', 30],
          ['storm', 'We fled the storm last weekend into a tiny harbour bar.', 3],
        ],
        query: 'Where did we fly for the weekend?',
        first: 'We flew to Porto for the long weekend.',
      },
      {
        // Stemming keeps "monthli" and "month" apart.
        memories: [
          ['wall-fee', 'Signed up at the climbing wall today: forty euros a month.', 40],
          ['wall-routes', 'The climbing wall got a new route setter this week.', 2],
        ],
        query: 'How much is the climbing wall monthly?',
        first: 'Signed up at the climbing wall today: forty euros a month.',
      },
    ];
    for (const { memories, query, first } of cases) {
      const contents = await rememberThenSearch(suite.proxy, memories, query);
      assert.equal(contents[0], first, `${query} ${JSON.stringify(contents)}`);
    }
  });
});

describe('memory recall: answer-type cues (no extractor)', () => {
  const suite = proxyWithoutLearning();

  test('"how much" prefers the matching memory that holds a number, "who" or "which …" the one that holds a name, an inference ("Would Anna enjoy…", "…合适吗？") the one that states a like, dislike, plan or limit, over a newer one that matches as well', async () => {
    const cases: Array<{ scope: string; memories: Array<[string, string, number]>; query: string; first: string }> = [
      {
        scope: 'answer-quantity',
        memories: [
          ['ferry-price', 'The ferry to the island costs twelve euros return.', 40],
          // As close to the question by its words, and newer: without the cue it ranks first.
          ['ferry-crowd', 'The ferry to the island was packed with cyclists.', 2],
        ],
        query: 'How much is the ferry to the island?',
        first: 'The ferry to the island costs twelve euros return.',
      },
      {
        scope: 'answer-name',
        memories: [
          ['boiler-who', 'Our neighbour Tomasz fixed the boiler on Friday.', 40],
          ['boiler-after', 'The boiler was fixed at last, the radiators are warm.', 2],
        ],
        query: 'Who fixed the boiler?',
        first: 'Our neighbour Tomasz fixed the boiler on Friday.',
      },
      {
        // A plural asks for names too ("which schools", "which cities"): it used to count as no cue.
        scope: 'answer-name-plural',
        memories: [
          ['school-name', 'Leo now goes to school at Escola Básica Quinta do Bosque.', 40],
          ['school-pool', 'Leo loves the swimming pool at school.', 2],
        ],
        query: 'Which schools has Leo been to?',
        first: 'Leo now goes to school at Escola Básica Quinta do Bosque.',
      },
      {
        scope: 'answer-name-which',
        memories: [
          ['club-title', 'The book club at work picked Blindness by Saramago.', 40],
          ['club-late', 'The book club at work picked a pub, nobody had finished it.', 2],
        ],
        query: 'Which novel did the book club at work pick?',
        first: 'The book club at work picked Blindness by Saramago.',
      },
      {
        scope: 'answer-disposition',
        memories: [
          ['cello-favourite', 'Anna says the cello is her favourite instrument.', 40],
          ['cello-left', 'Anna left the cello at her teacher’s house.', 2],
        ],
        query: 'Would Anna enjoy a cello concert?',
        first: 'Anna says the cello is her favourite instrument.',
      },
      {
        scope: 'answer-disposition-zh',
        memories: [
          ['erhu-hate', '何磊小时候被逼着学二胡，现在讨厌所有乐器。', 40],
          ['erhu-shop', '何磊今天路过一家卖二胡的店。', 2],
        ],
        query: '给何磊买一把二胡当生日礼物合适吗？',
        first: '何磊小时候被逼着学二胡，现在讨厌所有乐器。',
      },
    ];
    const wrong: string[] = [];
    for (const { scope, memories, query, first } of cases) {
      const results = await rememberThenSearch(suite.proxy, memories, query, scope);
      if (results[0] !== first) wrong.push(`${query} ${JSON.stringify(results)}`);
    }
    assert.deepEqual(wrong, []);
  });

  test('a "which" after a comma is a relative clause ("…, which means …"), not a question for a name: the newer matching memory stays first', async () => {
    const results = await rememberThenSearch(
      suite.proxy,
      [
        ['gate-who', 'Our neighbour Tomasz repaired the garden gate.', 40],
        // As close to the request by its words, and newer: only a name cue would put the other first.
        ['gate-after', 'The garden gate was repaired at last.', 2],
      ],
      'The garden gate was repaired, which means the dog can go out.',
      'answer-relative-which',
    );
    assert.equal(results[0], 'The garden gate was repaired at last.');
  });

  test('a question that asks with a dimension ("how heavy", "what did … cost", "剂量", "what mark") recalls the memory that states the amount in its unit ("4.4 kg", "$1,180", "1000毫克", "78 out of 100") and shares no word with it', async () => {
    const cases: Array<{ scope: string; memories: Array<[string, string, number]>; query: string; found: string }> = [
      {
        scope: 'measure-weight',
        memories: [
          ['vet-visit', 'Mochi weighed in at 4.4 kg at the clinic today.', 20],
          ['cat-glass', 'The cat knocked a glass off the table again.', 3],
          ['cat-food', 'Switched the cat to the salmon food, she loves it.', 5],
        ],
        query: 'How heavy is the cat?',
        found: 'Mochi weighed in at 4.4 kg at the clinic today.',
      },
      {
        scope: 'measure-price',
        memories: [
          ['booked', 'Booked Lisbon to Toronto return for $1,180 each.', 30],
          ['flights-delay', 'Our flights home were delayed by a storm.', 4],
        ],
        query: 'What did the flights cost?',
        found: 'Booked Lisbon to Toronto return for $1,180 each.',
      },
      {
        scope: 'measure-dose',
        memories: [
          ['metformin', '医生说二甲双胍加到每天1000毫克，早晚各一次。', 15],
          ['mum-walk', '我妈每天晚上散步一个小时。', 2],
        ],
        query: '我妈现在药的剂量是多少？',
        found: '医生说二甲双胍加到每天1000毫克，早晚各一次。',
      },
      {
        scope: 'measure-score',
        memories: [
          ['exam-result', 'Passed the B1! 78 out of 100.', 25],
          ['exam-school', 'The language school moved its test day to a Saturday.', 6],
        ],
        query: 'What mark did I get in the language test?',
        found: 'Passed the B1! 78 out of 100.',
      },
    ];
    const missed: string[] = [];
    for (const { scope, memories, query, found } of cases) {
      const results = await rememberThenSearch(suite.proxy, memories, query, scope);
      if (!results.includes(found)) missed.push(`${query} ${JSON.stringify(results)}`);
    }
    assert.deepEqual(missed, []);
  });
});

describe('memory recall through a clarifying question (no extractor)', () => {
  const suite = proxyWithoutLearning();

  test("the user's short reply to the assistant's clarifying question is recalled by the words said before the question", async () => {
    const now = Date.now();
    await api(suite.proxy, '/v1/memory/ingest', {
      session_id: 'lesson',
      turns: [
        { role: 'user', content: 'Portuguese class tonight, the subjunctive is killing me.', timestamp: now - 30 * DAY },
        { role: 'assistant', content: 'Who is your teacher?', timestamp: now - 30 * DAY + 60_000 },
        { role: 'user', content: 'Marta, at the language school near Saldanha.', timestamp: now - 30 * DAY + 120_000 },
      ],
    });
    const results = await search(suite.proxy, 'Who runs my Portuguese class?');
    assert.ok(
      results.some((result) => result.content.startsWith('Marta')),
      `the reply that names her is recalled: ${JSON.stringify(results.map((result) => result.content))}`,
    );
  });
});

describe("memory recall through a session's first user turn (no extractor)", () => {
  const suite = proxyWithoutLearning();

  /** One session of alternating user and assistant turns, a minute apart, `daysAgo` days back. */
  async function ingestSession(scope: string, session: string, daysAgo: number, turns: readonly string[]): Promise<void> {
    const start = Date.now() - daysAgo * DAY;
    await api(
      suite.proxy,
      '/v1/memory/ingest',
      {
        session_id: session,
        turns: turns.map((content, index) => ({ role: index % 2 === 0 ? 'user' : 'assistant', content, timestamp: start + index * 60_000 })),
      },
      scope,
    );
  }

  test("a later user turn that never names the session's topic is recalled by the words of the turn that opened the session", async () => {
    const scope = 'session-topic';
    await ingestSession(scope, 'benfica', 30, [
      'We found a flat in Benfica, three bedrooms near the metro!',
      'Congratulations! When do you move in?',
      'On the second of May, the movers are booked.',
      'Good. Anything else worth knowing?',
      'The landlady is Senhora Alves, and she adores cats.',
      'Lovely, that makes things easier with Mochi.',
    ]);
    // Newer memories that share the question's one other word (and name someone, as the answer does): without the session, they fill the first places.
    const others = [
      "Marta's landlady raised the rent again.",
      'The landlady in Porto, Dona Rosa, never fixed the heater.',
      'Our office landlady, Mrs Costa, wants the keys back by Friday.',
      "Pedro's landlady lets him keep a piano in the hall.",
      'The landlady of the gym building, Senhora Lopes, complained about noise.',
      "Bruno's landlady is selling the whole building.",
    ];
    for (const [index, content] of others.entries()) await ingestSession(scope, `other-${index}`, 10 - index, [content]);
    const results = (await search(suite.proxy, 'Who is the landlady of the Benfica flat?', scope)).map((result) => result.content);
    assert.ok(results.includes('The landlady is Senhora Alves, and she adores cats.'), `the turn that names her is recalled: ${JSON.stringify(results)}`);
  });

  test('the turn that opened a session is recalled by a word the user said later in it', async () => {
    const scope = 'session-opening';
    await ingestSession(scope, 'niro', 40, [
      'Done, we got the Kia Niro! White, 2021, 19,500 euros.',
      'Congratulations. Did the dealer include anything?',
      'New tyres and a year of warranty.',
      'That is a decent deal.',
      'The salesman pushed an extended warranty for the hybrid; we said no.',
      'Usually the right call.',
    ]);
    // Newer memories that share the question's other word (and hold an amount, as the answer does): without the session, they fill the first places.
    const others = [
      'The gym is 45 euros a month.',
      'Parking downtown is 20 euros a day.',
      'The school trip was 120 euros.',
      "Leo's new shoes were 60 euros.",
      'The concert tickets were 80 euros each.',
      'Our internet bill is 35 euros.',
    ];
    for (const [index, content] of others.entries()) await ingestSession(scope, `other-${index}`, 10 - index, [content]);
    const results = (await search(suite.proxy, 'How many euros did the hybrid cost?', scope)).map((result) => result.content);
    assert.ok(results.includes('Done, we got the Kia Niro! White, 2021, 19,500 euros.'), `the turn that names the car is recalled: ${JSON.stringify(results)}`);
  });
});

describe('memory recall across wordings and languages (no extractor)', () => {
  const suite = proxyWithoutLearning();

  /** Each test in a scope of its own: one user turn per session, `daysAgo` before now. */
  async function remember(scope: string, turns: ReadonlyArray<[content: string, daysAgo: number]>): Promise<void> {
    const now = Date.now();
    for (const [index, [content, daysAgo]] of turns.entries())
      await api(
        suite.proxy,
        '/v1/memory/ingest',
        { session_id: `${scope}-${index}`, turns: [{ role: 'user', content, timestamp: now - daysAgo * DAY }] },
        scope,
      );
  }
  const recall = async (scope: string, query: string) =>
    ((await api(suite.proxy, '/v1/memory/search', { query, limit: 5 }, scope)).results as Array<{ content: string }>).map((result) => result.content);

  /**
   * Each case in a scope of its own. The first memory is the one the question is about: it must be
   * `among` the results, `first` of them, or the `only` one.
   */
  const CASES: ReadonlyArray<{
    name: string;
    scope: string;
    memories: Array<[content: string, daysAgo: number]>;
    question: string;
    expect: 'among' | 'first' | 'only';
  }> = [
    {
      name: 'an English question recalls a memory told in Chinese through the English glosses of its words, which the question shares',
      scope: 'gloss',
      memories: [
        ['我们家只有一辆车，是一辆白色的本田思域，去年买的二手车。', 30],
        ['The family picnic is on Sunday at the lake.', 5],
        ['Our drive to the coast took four hours.', 3],
      ],
      question: 'What car does our family have?',
      expect: 'among',
    },
    {
      name: 'a short form of a word no memory holds finds the memory with the longer word ("physio", "physiotherapist")',
      scope: 'short-form',
      memories: [
        ['I saw a physiotherapist, Dr. Brandt, about my lower back.', 40],
        ['My back garden needs a new fence.', 2],
      ],
      question: 'Who is my physio?',
      expect: 'only',
    },
    {
      name: 'a Chinese question recalls the English memory that answers it even when other memories hold its Chinese words as written',
      scope: 'bilingual',
      memories: [
        ['Dr. Alvarez at Northgate Clinic is treating my knee every Tuesday morning.', 30],
        ['膝盖还在恢复，不能跑太多。', 3],
        ['这种病需要长期治疗。', 2],
      ],
      question: '我的膝盖是谁在治疗？',
      expect: 'among',
    },
    {
      name: 'in a Chinese question, function words the segmenter joins ("谁在": who + at) match nothing: the memory about its topic ranks above one that only shares them',
      scope: 'zh-function-words',
      memories: [
        ['我们的猫叫馒头，每天早上都是我老公喂它。', 30],
        ['谁在楼道里放了一辆自行车？', 20],
        ['我的天，今天好热。', 10],
      ],
      question: '家里的猫平时是谁在喂？',
      expect: 'first',
    },
    {
      name: 'a months-old memory that matches the whole question outranks a recent one that matches only part of it',
      scope: 'recency',
      memories: [
        ['We adopted a retired greyhound and called him Biscuit.', 200],
        ['The greyhound we adopted is scared of the vacuum cleaner.', 1],
      ],
      question: 'What did we call the greyhound we adopted?',
      expect: 'first',
    },
  ];

  for (const { name, scope, memories, question, expect } of CASES) {
    test(name, async () => {
      await remember(scope, memories);
      const results = await recall(scope, question);
      const answer = memories[0]![0];
      if (expect === 'only') assert.deepEqual(results, [answer]);
      else if (expect === 'first') assert.equal(results[0], answer, JSON.stringify(results));
      else assert.ok(results.includes(answer), JSON.stringify(results));
    });
  }
});

describe('memory search keys written by the extractor', () => {
  test('a Chinese question recalls a memory told in English through the search keys the extractor wrote; the keys are never injected', async () => {
    const prompts: string[] = [];
    const upstreamHandler = learningAwareUpstream({
      extractor: (request) => {
        prompts.push(userText(request));
        return JSON.stringify({
          memories: [
            {
              action: 'add',
              type: 'semantic',
              content: 'The user is allergic to penicillin (a rash as a child); ibuprofen is fine.',
              importance: 0.8,
              turn: 1,
              search_keys: ['Which medicine am I allergic to?', '我对什么药过敏？', '哪些药我不能吃？'],
            },
          ],
        });
      },
    });
    const { upstream, proxy, close } = await startScriptedProxy({
      upstreamHandler,
      config: { memory: { flush_every_n_turns: 1, extractor_model: 'scripted-model' }, skills: { auto_evolve: false } },
    });
    try {
      await api(proxy, '/v1/memory/ingest', {
        session_id: 'doctor',
        turns: [
          { role: 'user', content: 'Told the physio I react badly to penicillin, I got a rash as a kid. She said ibuprofen is fine.' },
          { role: 'assistant', content: 'Good that it is on record; mention it to every doctor.' },
        ],
      });
      await api(proxy, '/v1/memory/ingest', { session_id: 'chinese', turns: [{ role: 'user', content: '周末我想做红烧肉，需要买什么？' }] });
      await waitFor(async () => (await search(proxy, 'penicillin')).some((result) => result.origin === 'extractor'), 15_000);
      const recalled = await search(proxy, '我对哪种药过敏？');
      assert.equal(recalled[0]?.content, 'The user is allergic to penicillin (a rash as a child); ibuprofen is fine.');
      assert.deepEqual(recalled[0]?.search_keys, ['Which medicine am I allergic to?', '我对什么药过敏？', '哪些药我不能吃？']);
      assert.ok(
        prompts.some((prompt) => /The user writes in: English, Chinese\./.test(prompt)),
        'the extractor is told which languages the keys need',
      );

      const client = new OpenAI({ baseURL: `${proxy.url}/v1`, apiKey: 'x', maxRetries: 0 });
      await client.chat.completions.create(
        { model: 'm', messages: [{ role: 'user', content: '我对哪种药过敏？' }] },
        { headers: { 'X-Session-Id': 'ask', 'X-Memory-Scope': 'recall' } },
      );
      const agent = upstream.modelRequests().filter((request) => !isExtractorCall(request));
      const system = JSON.stringify(agent.at(-1)!.body.messages);
      assert.match(system, /allergic to penicillin/, 'the memory is injected');
      assert.doesNotMatch(system, /哪些药我不能吃/, 'its search keys are not');
    } finally {
      await close();
    }
  });
});

describe('memory recall: words read as what they are (no extractor)', () => {
  const suite = proxyWithoutLearning();

  test('"quite" is a degree word like "very", not the verb "quit" it stems to: a question about quitting does not recall a Chinese turn that only says 很 (very, quite)', async () => {
    const results = await rememberThenSearch(
      suite.proxy,
      [
        ['quit-bakery', 'I handed in my notice at the bakery and quit in March.', 40],
        ['very-tired', '今天很累。', 2],
      ],
      'When did I quit?',
      'words-quite-quit',
    );
    assert.deepEqual(results, ['I handed in my notice at the bakery and quit in March.']);
  });

  test('a word is related only to what its own commonest sense is: a question about a level does not recall a turn about a day ("dais" shares its stem with "day")', async () => {
    const results = await rememberThenSearch(
      suite.proxy,
      [
        ['b1-exam', 'Passed the B1 exam in Portuguese last week.', 20],
        ['long-day', 'Long day at the site today, the crane broke down twice.', 2],
      ],
      'What level is my Portuguese at?',
      'words-day-level',
    );
    assert.equal(results[0], 'Passed the B1 exam in Portuguese last week.');
    assert.ok(!results.includes('Long day at the site today, the crane broke down twice.'), JSON.stringify(results));
  });

  test('a quantity is read from an amount only: "I am" is no distance, and a price in pounds or quid answers what something cost', async () => {
    const far = await rememberThenSearch(
      suite.proxy,
      [
        ['office-distance', 'The new office is 3 km from the flat.', 20],
        ['tired', 'I am so tired of packing boxes.', 2],
      ],
      'How far is the new office?',
      'words-am',
    );
    assert.ok(far.includes('The new office is 3 km from the flat.'), JSON.stringify(far));
    assert.ok(!far.includes('I am so tired of packing boxes.'), JSON.stringify(far));
    const cost = await rememberThenSearch(
      suite.proxy,
      [
        ['yaris', 'We bought a 2019 Toyota Yaris from a dealer in Stockport for 9,800 pounds.', 30],
        ['holiday', 'Booked the cottage in Wales for the half-term week.', 5],
      ],
      'How much did the new car cost?',
      'words-pounds',
    );
    assert.ok(cost.includes('We bought a 2019 Toyota Yaris from a dealer in Stockport for 9,800 pounds.'), JSON.stringify(cost));
  });

  test('the unit of time a question counts or dates its answer in is no search word: "How many months passed between the engagement and the wedding?", "In which month did we move?", "How long after … did …?", "How old is my father?" recall the turns that tell the events or the age, not a newer one that says "months", "long" or "old"', async () => {
    const engaged = 'We got engaged! Callum proposed at the lighthouse on Skye.';
    const wedding = 'The wedding is booked for 17 April at the venue in Portobello.';
    const moving = 'Moving day was chaos, the movers were three hours late.';
    const cases: ReadonlyArray<{ question: string; events: string[]; newer: string }> = [
      {
        question: 'How many months passed between our engagement and the wedding?',
        events: [engaged, wedding],
        newer: 'Passed my driving test after three months of lessons!',
      },
      { question: 'In which month did we move?', events: [moving], newer: 'The gym near the station is 40 euros a month.' },
      {
        question: 'How long after the first rabbit came home did the second one arrive?',
        events: ['We adopted a rabbit from the rescue centre, a white one called Dumpling.', 'We adopted a second rabbit, a brown lop called Biscuit.'],
        newer: 'Came home late after a long rehearsal, nine hours in the booth.',
      },
      {
        question: 'How old is my father?',
        events: ['My father is sixty-three and still does tai chi every morning.'],
        newer: "Cleared out my father's old shed today.",
      },
    ];
    for (const [index, { question, events, newer }] of cases.entries()) {
      const memories = [...events, newer].map((content, turn): [string, string, number] => [`case${index}-${turn}`, content, 200 - 50 * turn]);
      const results = await rememberThenSearch(suite.proxy, memories, question, `words-time-unit-${index}`);
      assert.deepEqual(new Set(results.slice(0, events.length)), new Set(events), question);
      assert.ok(!results.slice(0, events.length).includes(newer), JSON.stringify(results));
    }
  });

  test('a question about a job ("What does my climbing buddy do for a living?", "我老公是做什么工作的？") puts the turn that names an occupation ("He is a firefighter", "物理老师") before a newer one that only shares the person', async () => {
    const cases: ReadonlyArray<{ question: string; job: string; newer: string }> = [
      {
        question: 'What does my climbing buddy do for a living?',
        job: 'Met a guy at the climbing wall, Tiago. He is a firefighter and gives great tips.',
        newer: 'Went climbing with Tiago again, my forearms are dead.',
      },
      {
        question: '我老公是做什么工作的？',
        job: '我老公何磊是高中物理老师，这学期带毕业班。',
        newer: '我老公何磊周末带孩子去公园了。',
      },
    ];
    for (const [index, { question, job, newer }] of cases.entries()) {
      const results = await rememberThenSearch(
        suite.proxy,
        [
          [`job${index}-old`, job, 90],
          [`job${index}-new`, newer, 1],
        ],
        question,
        `words-job-${index}`,
      );
      assert.equal(results[0], job, `${question} ${JSON.stringify(results)}`);
    }
  });

  test('an abbreviated title is read as what it stands for: "Who is my family doctor?" recalls "My GP, Dr. Paula Reis, …", which shares no word with it', async () => {
    const results = await rememberThenSearch(
      suite.proxy,
      [
        ['gp', 'Had blood tests last week. My GP, Dr. Paula Reis, says my vitamin D is low.', 60],
        ['family', 'The family is coming over for lunch on Sunday.', 3],
        ['drive', 'We looked at a house on Cromwell Dr, near the park.', 5],
      ],
      'Who is my family doctor?',
      'words-doctor',
    );
    assert.ok(results.includes('Had blood tests last week. My GP, Dr. Paula Reis, says my vitamin D is low.'), JSON.stringify(results));
    assert.ok(!results.includes('We looked at a house on Cromwell Dr, near the park.'), JSON.stringify(results));
  });
});
