import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import OpenAI from 'openai';
import { isSearchKeysCall, learningAwareUpstream, userText } from './support/evolver.js';
import { searchMemory, tempHome, waitFor, type ProxyHandle } from './support/proxy.js';
import { startScriptedProxy, type ScriptedProxy } from './support/scripted-proxy.js';
import { englishOnlyStarter } from './support/skill-banks.js';
import type { ScriptedUpstream } from './support/upstream.js';

/** Skills alone: no memory and no skill evolution, so what is injected is the retrieval under test. */
const SKILLS_ONLY = { skills: { auto_evolve: false }, memory: { enabled: false } };

/** The skills block the proxy added to the last request the agent sent (empty when none). */
function injectedSkills(upstream: ScriptedUpstream): string[] {
  const system = upstream
    .modelRequests()
    .filter((request) => !isSearchKeysCall(request))
    .at(-1)!.body.messages[0];
  const text = system?.role === 'system' && typeof system.content === 'string' ? system.content : '';
  return [...text.matchAll(/^### ([a-z0-9-]+)/gm)].map((match) => match[1]!);
}

async function ask(proxy: ProxyHandle, text: string, session: string): Promise<void> {
  const client = new OpenAI({ baseURL: `${proxy.url}/v1`, apiKey: 'x', maxRetries: 0 });
  await client.chat.completions.create({ model: 'scripted-model', messages: [{ role: 'user', content: text }] }, { headers: { 'X-Session-Id': session } });
}

/**
 * A proxy over the English starter bank whose scripted model writes `keys` for the refactoring
 * skill (in the first language each skill is asked in) and none for the others; every keys call's
 * user text goes to `keyCalls`.
 */
async function refactoringKeysProxy(keys: string[], keyCalls: string[]): Promise<ScriptedProxy> {
  const home = tempHome();
  englishOnlyStarter(join(home, 'skills'));
  const upstreamHandler = learningAwareUpstream({
    searchKeys: (request) => {
      const asked = userText(request);
      keyCalls.push(asked);
      const names = [...asked.matchAll(/^### ([a-z0-9-]+) \(keys in: ([a-z, ]+)\)/gm)];
      return JSON.stringify({
        skills: names.map(([, name, languages]) => ({ name, language: languages!.split(', ')[0], keys: name === 'safe-refactoring' ? keys : [] })),
      });
    },
  });
  return startScriptedProxy({ home, upstreamHandler, config: SKILLS_ONLY });
}

describe('cross-lingual skills: an English skill bank answers Chinese requests', () => {
  let scripted: ScriptedProxy;
  let upstream: ScriptedUpstream;
  let proxy: ProxyHandle;
  const keyCalls: string[] = [];
  /** A request no dictionary bridges: "nobody dares touch this lump of ancestral code". */
  const SLANG = '这坨祖传代码谁也不敢动';

  before(async () => {
    // The scripted search keys call: keys in Chinese for the refactoring skill, none for the others.
    scripted = await refactoringKeysProxy(['祖传代码', '屎山', '不敢动的老代码', '重构'], keyCalls);
    ({ upstream, proxy } = scripted);
  });
  after(() => scripted?.close());

  test('with the bundled glossary alone, a Chinese SQL request gets the SQL skill and a merge-conflict question the git skill', async () => {
    await ask(proxy, '帮我写一个 SQL 查询统计每个月的订单数', 'zh-1');
    assert.ok(injectedSkills(upstream).includes('sql-query-writing'), `got ${injectedSkills(upstream).join(', ') || 'nothing'}`);
    await ask(proxy, '两个分支合并冲突了怎么办', 'zh-2');
    assert.ok(injectedSkills(upstream).includes('git-commit-hygiene'), `got ${injectedSkills(upstream).join(', ') || 'nothing'}`);
  });

  test('with the glossary alone, a Chinese request found through translated words gets its skill, and a near-tie found through a dictionary sense stays out', async () => {
    // Less evidence than an English request brings (translations weigh less than the user's own words), still enough.
    await ask(proxy, '这个项目太大了，把它拆分成小任务', 'zh-4');
    assert.deepEqual(injectedSkills(upstream), ['task-breakdown']);
    // "论文" → "paper" also reaches the citation skill, a little below the summarising one: a near-tie only the translation made.
    await ask(proxy, '总结一下这篇研究论文的主要发现', 'zh-5');
    assert.deepEqual(injectedSkills(upstream), ['paper-summarizing']);
    await ask(proxy, '推荐一部适合周末看的好电影', 'zh-6');
    assert.deepEqual(injectedSkills(upstream), [], 'an off-topic request gets nothing');
  });

  test('a request the glossary cannot bridge finds its skill once the search keys job has written keys in Chinese', async () => {
    await ask(proxy, SLANG, 'zh-3');
    assert.deepEqual(injectedSkills(upstream), [], 'the glossary alone should not find it');
    // The user has now written Chinese in several requests: the job writes Chinese keys for every skill.
    const keys = await waitFor(async () => {
      const response = await fetch(`${proxy.url}/v1/skills/safe-refactoring`);
      const body = (await response.json()) as { search_keys: Record<string, string[]> };
      return body.search_keys['zh'];
    }, 30_000);
    assert.deepEqual(keys, ['祖传代码', '屎山', '不敢动的老代码', '重构']);
    assert.ok(keyCalls.length >= 1 && keyCalls.every((call) => call.includes('Languages to write keys in: zh')), keyCalls.join('\n---\n'));
    assert.ok(!keyCalls.join('\n').includes(SLANG), 'the job is shown the skills, not the user requests');
    await ask(proxy, SLANG, 'zh-4');
    assert.deepEqual(injectedSkills(upstream), ['safe-refactoring']);
    // The keys live beside the index, never in SKILL.md.
    const shown = await proxy.cli(['skills', 'show', 'safe-refactoring']);
    assert.match(shown.stdout, /search keys \(zh\): 祖传代码, 屎山/);
  });

  test('the search keys job asks about each of the 42 skills once, more than one job holds, those the model had no keys for too, and then stops', async () => {
    const askedAbout = () => keyCalls.flatMap((call) => [...call.matchAll(/^### ([a-z0-9-]+) \(keys in:/gm)].map((match) => match[1]!));
    await waitFor(() => new Set(askedAbout()).size === 42, 30_000).catch(() => {
      throw new Error(`asked about ${new Set(askedAbout()).size} of 42 skills`);
    });
    // A job that found more to do than it holds runs again; once every skill has an answer (most of them empty) none is left.
    await waitFor(async () => {
      const { queue } = (await (await fetch(`${proxy.url}/status`)).json()) as { queue: { queued: number; leased: number } };
      return queue.queued + queue.leased === 0;
    }, 30_000);
    const calls = keyCalls.length;
    await new Promise((resolveWait) => setTimeout(resolveWait, 1_500));
    assert.equal(keyCalls.length, calls, 'no further search keys call');
    assert.equal(askedAbout().length, 42, 'each skill asked about once');
    const shown = await proxy.cli(['skills', 'show', 'task-breakdown']);
    assert.doesNotMatch(shown.stdout, /search keys/, 'an empty answer is stored, not shown');
  });
});

/**
 * A proxy with memory (no extraction, no skill evolution) whose scripted model answers each memory
 * search keys call with `keysFor(content, language)` for every unit and language asked; every
 * call's user text goes to `keyCalls`.
 */
async function memoryKeysProxy(
  keysFor: (content: string, language: string) => string[],
  keyCalls: string[],
  memory: Record<string, unknown> = {},
): Promise<ScriptedProxy> {
  const upstreamHandler = learningAwareUpstream({
    memoryKeys: (request) => {
      const asked = userText(request);
      keyCalls.push(asked);
      const units = [...asked.matchAll(/^### (mem_[a-z0-9]+) \(keys in: ([a-z, ]+)\)\n(.*)$/gm)];
      return JSON.stringify({
        units: units.flatMap(([, id, languages, content]) => languages!.split(', ').map((language) => ({ id, language, keys: keysFor(content!, language) }))),
      });
    },
  });
  return startScriptedProxy({ upstreamHandler, config: { skills: { auto_evolve: false }, memory: { auto_extract: false, ...memory } } });
}

/** Saves a memory by hand (`POST /v1/memory`). */
async function addMemory(proxy: ProxyHandle, content: string): Promise<void> {
  const added = await fetch(`${proxy.url}/v1/memory`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ type: 'semantic', content }),
  });
  assert.equal(added.status, 201, await added.text());
}

describe('cross-lingual memory: a Chinese question recalls a memory written in English', () => {
  let scripted: ScriptedProxy;
  let proxy: ProxyHandle;
  const keyCalls: string[] = [];
  /** "What is my boss (the cat, in internet slang) called?": no dictionary word of it is in the memory. */
  const SLANG = '我家主子叫啥';
  const MEMORY = 'Mochi is the name of the family cat; she eats only salmon kibble.';

  const search = (query: string) => searchMemory(proxy, query);
  const remember = () => addMemory(proxy, MEMORY);

  before(async () => {
    // The scripted memory search keys call: Chinese keys for the cat memory.
    scripted = await memoryKeysProxy((content) => (content.includes('Mochi') ? ['主子', '猫主子', '猫的名字', '宠物猫'] : []), keyCalls);
    ({ proxy } = scripted);
    await remember();
  });
  after(() => scripted?.close());

  test('the memory search keys job writes keys in the language the user writes, and a question the glossary cannot bridge then recalls the English memory', async () => {
    assert.deepEqual(await search(SLANG), [], 'the glossary alone should not find it');
    // The user writes Chinese: the job writes Chinese keys for the English memory.
    await ask(proxy, '帮我看看这个报错是什么意思', 'zh-m1');
    await ask(proxy, '明天提醒我给猫买猫粮', 'zh-m2');
    const found = await waitFor(async () => ((await search(SLANG)).length > 0 ? search(SLANG) : undefined), 30_000);
    assert.deepEqual(found, [MEMORY]);
    assert.ok(keyCalls.length >= 1 && keyCalls.every((call) => call.includes('Languages to write keys in: zh')), keyCalls.join('\n---\n'));
    assert.ok(!keyCalls.join('\n').includes(SLANG), 'the job is shown the memories, not the questions');
    // The keys are searched, never shown: the memory's content is unchanged.
    assert.equal((await search('Mochi cat'))[0], MEMORY);
    // Forgotten and saved again, the same text is indexed with its keys as it is written, with no new call.
    const calls = keyCalls.length;
    const listed = (await (await fetch(`${proxy.url}/v1/memory/search`, { method: 'POST', body: JSON.stringify({ query: 'Mochi' }) })).json()) as {
      results: Array<{ id: string }>;
    };
    assert.equal((await fetch(`${proxy.url}/v1/memory/${listed.results[0]!.id}`, { method: 'DELETE' })).status, 200);
    assert.deepEqual(await search(SLANG), []);
    await remember();
    assert.deepEqual(await search(SLANG), [MEMORY]);
    assert.equal(keyCalls.length, calls);
  });

  test('a Chinese question about the 幼儿园 recalls the English memory about the daycare, with the glossary alone', async () => {
    const DAYCARE = 'Leo goes to the Little Sprouts daycare on Elm Street.';
    const added = await fetch(`${proxy.url}/v1/memory`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ type: 'semantic', content: DAYCARE }),
    });
    assert.equal(added.status, 201, await added.text());
    assert.deepEqual(await search('孩子的幼儿园叫什么'), [DAYCARE]);
  });
});

describe('memory search keys for a memory larger than one job', () => {
  let scripted: ScriptedProxy;
  let proxy: ProxyHandle;
  /** Each unit id the scripted keys calls were asked about, with how often. */
  const asked = new Map<string, number>();
  const MEMORIES = Array.from(
    { length: 40 },
    (_, index) => `Reading note ${index + 1}: chapter ${index + 1} of the harbour history covers the year ${1800 + index}.`,
  );

  before(async () => {
    const upstreamHandler = learningAwareUpstream({
      memoryKeys: (request) => {
        const units = [...userText(request).matchAll(/^### (mem_[a-z0-9]+) \(keys in: ([a-z, ]+)\)$/gm)];
        for (const [, id] of units) asked.set(id!, (asked.get(id!) ?? 0) + 1);
        return JSON.stringify({ units: units.map(([, id]) => ({ id, language: 'zh', keys: ['港口历史'] })) });
      },
    });
    scripted = await startScriptedProxy({ upstreamHandler, config: { skills: { auto_evolve: false }, memory: { auto_extract: false } } });
    ({ proxy } = scripted);
    for (const content of MEMORIES) {
      const added = await fetch(`${proxy.url}/v1/memory`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ type: 'semantic', content }),
      });
      assert.equal(added.status, 201, await added.text());
    }
  });
  after(() => scripted?.close());

  test('the job goes on until every unit has keys in the language the user writes (more than one job holds), asking about each unit once', async () => {
    // Two requests in Chinese make it a language the user writes.
    await ask(proxy, '帮我整理一下港口历史的读书笔记', 'zh-notes');
    await ask(proxy, '第三章讲的是哪一年', 'zh-notes');
    await waitFor(() => asked.size === MEMORIES.length, 30_000).catch(() => {
      throw new Error(`keys were asked for ${asked.size} of ${MEMORIES.length} units`);
    });
    assert.ok(
      [...asked.values()].every((times) => times === 1),
      'no unit was asked about twice',
    );
  });
});

describe('own-language memory search keys: an English user recalls a memory added by hand in English, asked about in other words than its own', () => {
  let scripted: ScriptedProxy;
  let proxy: ProxyHandle;
  const keyCalls: string[] = [];
  const MEMORY = 'The user drives a 2015 Subaru Outback.';
  /** No word of it is in the memory, and neither the thesaurus nor the similar words link "car" to it. */
  const OTHER_WORDS = 'what car do I have';
  /** Imported with keys of its own, as the extractor writes them: it is not asked for more in its language. */
  const KEYED = { type: 'semantic', content: 'The user sees Dr. Amy Lee for dental checkups.', search_keys: ['dentist', 'teeth'] };
  const UNRELATED = 'which bank holds my mortgage';
  const search = (query: string) => searchMemory(proxy, query);

  before(async () => {
    // The scripted memory search keys call: English keys for the Subaru memory when asked in English.
    scripted = await memoryKeysProxy(
      (content, language) => (language === 'en' && content.includes('Subaru') ? ['car', 'vehicle', 'station wagon', 'what I drive'] : []),
      keyCalls,
    );
    ({ proxy } = scripted);
    await addMemory(proxy, MEMORY);
    const imported = await fetch(`${proxy.url}/v1/memory/import`, { method: 'POST', body: `${JSON.stringify(KEYED)}\n` });
    assert.deepEqual(await imported.json(), { imported: 1, skipped: [] });
  });
  after(() => scripted?.close());

  test("the memory search keys job asks for keys in the memory's own language, and a question in other words then recalls it; an unrelated one still gets nothing", async () => {
    assert.deepEqual(await search(OTHER_WORDS), [], 'the memory text alone should not find it');
    // Two English requests make English a language the user writes: the memory's own.
    await ask(proxy, 'please format this date string as ISO', 'en-m1');
    await ask(proxy, 'summarise this article in three lines', 'en-m2');
    const found = await waitFor(async () => ((await search(OTHER_WORDS)).length > 0 ? search(OTHER_WORDS) : undefined), 30_000);
    assert.deepEqual(found, [MEMORY]);
    assert.ok(
      keyCalls.some((call) => /^### mem_[a-z0-9]+ \(keys in: en\)\nThe user drives a 2015 Subaru/m.test(call)),
      keyCalls.join('\n---\n'),
    );
    assert.ok(!keyCalls.join('\n').includes('Amy Lee'), 'a memory with keys of its own is not asked about in its own language');
    assert.deepEqual(await search(UNRELATED), [], 'an unrelated question still gets nothing');
  });
});

describe('memory.search_keys: false', () => {
  let scripted: ScriptedProxy;
  let proxy: ProxyHandle;
  const keyCalls: string[] = [];

  before(async () => {
    scripted = await memoryKeysProxy(() => ['car'], keyCalls, { search_keys: false });
    ({ proxy } = scripted);
    await addMemory(proxy, 'The user drives a 2015 Subaru Outback.');
    await addMemory(proxy, '用户的猫叫麻糬。');
  });
  after(() => scripted?.close());

  test('asks the model for no memory search keys, whatever languages the user writes, and the learning queue drains', async () => {
    await ask(proxy, 'please format this date string as ISO', 'off-en-1');
    await ask(proxy, 'summarise this article in three lines', 'off-en-2');
    await ask(proxy, '帮我把这段话翻译成英文', 'off-zh-1');
    await ask(proxy, '这个函数为什么报错', 'off-zh-2');
    await waitFor(async () => {
      const status = (await (await fetch(`${proxy.url}/status`)).json()) as { queue: { queued?: number; leased?: number }; learning: { running: number } };
      return (status.queue.queued ?? 0) + (status.queue.leased ?? 0) === 0 && status.learning.running === 0;
    }, 30_000);
    assert.deepEqual(keyCalls, []);
    assert.deepEqual(await searchMemory(proxy, 'what car do I have'), []);
  });
});

/** A skills-only proxy whose library holds `skills` (name → description and body), each a one-paragraph SKILL.md. */
async function proxyWithSkills(skills: Record<string, string>, category: string): Promise<ScriptedProxy> {
  const home = tempHome();
  for (const [name, body] of Object.entries(skills)) {
    mkdirSync(join(home, 'skills', name), { recursive: true });
    writeFileSync(
      join(home, 'skills', name, 'SKILL.md'),
      `---\nname: ${name}\ndescription: "${body}"\ncategory: ${category}\norigin: starter\nversion: 1\n---\n\n# ${name}\n\n${body}\n`,
    );
  }
  return startScriptedProxy({ home, upstreamHandler: learningAwareUpstream({}), config: SKILLS_ONLY });
}

describe('cross-lingual skills: software terms the general dictionaries lack', () => {
  let scripted: ScriptedProxy;
  let upstream: ScriptedUpstream;
  let proxy: ProxyHandle;
  /** English skills each named by a term a Chinese or Japanese request writes as a compound or a loanword. */
  const SKILLS: Record<string, string> = {
    'record-timestamps': 'Store a UTC timestamp and the metadata of its source with every record you write.',
    'filename-handling': 'Quote every filename in shell commands; a filename may hold characters the shell splits on.',
    'deploy-from-repository': 'Deploy only what the repository holds: deploy the tagged commit, never a local copy.',
    'weekly-report': 'Write the weekly report for a manager: what was done, what is next, what is blocked.',
    'delete-safely': 'Delete no file for good at once: move it to the trash and empty the trash a week later.',
    'email-sending': 'Send an email only after reading it once more and checking who it goes to.',
    'incident-postmortem': 'After an incident in production, write what happened, when it was noticed, and what will prevent it.',
  };

  before(async () => {
    scripted = await proxyWithSkills(SKILLS, 'coding');
    ({ upstream, proxy } = scripted);
  });
  after(() => scripted?.close());

  test('a Chinese request with 时间戳 and 元数据 finds the English timestamp skill, and one about a 文件名 the filename skill', async () => {
    await ask(proxy, '时间戳和元数据应该怎么存', 'zh-t1');
    assert.deepEqual(injectedSkills(upstream), ['record-timestamps']);
    await ask(proxy, '文件名里有中文怎么处理', 'zh-t2');
    assert.deepEqual(injectedSkills(upstream), ['filename-handling']);
  });

  test('a Japanese request whose verb is inflected (消して, 送って) finds the English skill through the dictionary form of the verb', async () => {
    // The noun alone is too little evidence for a skill found through translations: the verb makes it.
    await ask(proxy, 'ファイルを消して', 'ja-v1');
    assert.deepEqual(injectedSkills(upstream), ['delete-safely']);
    await ask(proxy, 'メールを送って', 'ja-v2');
    assert.deepEqual(injectedSkills(upstream), ['email-sending']);
  });

  test('a Chinese request about a 线上事故 (an incident in production) finds the English incident skill', async () => {
    await ask(proxy, '线上事故', 'zh-t3');
    assert.deepEqual(injectedSkills(upstream), ['incident-postmortem']);
  });

  test('a Japanese request in katakana loanwords (リポジトリ, デプロイ, タイムスタンプ, メタデータ) finds its English skill', async () => {
    await ask(proxy, 'リポジトリからデプロイする', 'ja-t1');
    assert.deepEqual(injectedSkills(upstream), ['deploy-from-repository']);
    await ask(proxy, 'タイムスタンプとメタデータを保存したい', 'ja-t2');
    assert.deepEqual(injectedSkills(upstream), ['record-timestamps']);
  });
});

describe('cross-lingual skills: senses the dictionaries put late, words they hold only as a reading, verbs that can be done', () => {
  let scripted: ScriptedProxy;
  let upstream: ScriptedUpstream;
  let proxy: ProxyHandle;
  const SKILLS: Record<string, string> = {
    'password-storage': 'Store login passwords only as slow salted hashes; never log a password or send it in a URL.',
    'print-layout': 'Print documents with an embedded font so the printed page looks as it does on screen.',
    'web-page-watch': 'Watch a web page for changes and send a notice when the page is updated.',
    'restore-files': 'Restore a deleted file from the backup and put it back where it was.',
    'delete-safely': 'Delete no file for good at once: move it to the trash and empty the trash a week later.',
    'email-sending': 'Send an email only after reading it once more and checking who it goes to.',
    'weekly-report': 'Write the weekly report for a manager: what was done, what is next, what is blocked.',
  };

  before(async () => {
    scripted = await proxyWithSkills(SKILLS, 'coding');
    ({ upstream, proxy } = scripted);
  });
  after(() => scripted?.close());

  test('a Chinese request about a 登录密码 (login password), or about 打印 and 字体 (printing, a font), finds its English skill though the dictionary gives those senses late', async () => {
    // CC-CEDICT: 登录 "to register, to log in", 密码 "cipher, secret code, password", 打印 "to affix a seal, to stamp, to print", 字体 "calligraphic style, typeface, font".
    await ask(proxy, '登录密码怎么存才安全', 'zh-s1');
    assert.deepEqual(injectedSkills(upstream), ['password-storage']);
    await ask(proxy, '打印出来的字体不对', 'zh-s2');
    assert.deepEqual(injectedSkills(upstream), ['print-layout']);
  });

  test('a Japanese request about a ページ (a page, which EDICT holds only as the reading of 頁) finds the English page-watching skill', async () => {
    await ask(proxy, 'このページが更新されたら知らせてほしい', 'ja-s1');
    assert.deepEqual(injectedSkills(upstream), ['web-page-watch']);
  });

  test('a Japanese request with a verb in its potential form (戻せる, 送れる: can restore, can send) finds the English skill through the dictionary form', async () => {
    await ask(proxy, 'バックアップから戻せる？', 'ja-s2');
    assert.deepEqual(injectedSkills(upstream), ['restore-files']);
    await ask(proxy, 'メールを送れる？', 'ja-s3');
    assert.deepEqual(injectedSkills(upstream), ['email-sending']);
  });
});

describe('cross-lingual skills: an English request finds a skill written in Japanese', () => {
  let scripted: ScriptedProxy;
  let upstream: ScriptedUpstream;
  let proxy: ProxyHandle;
  /** Skills written in Japanese (named in romaji, so their names hold no English word): a child's homework and diary, and their grading. */
  const SKILLS: Record<string, string> = {
    'kodomo-shukudai': '子供の宿題と日記は、夕食の前にチェックします。',
    'shukudai-saiten': '宿題と日記の採点は、先生が翌日までに返します。',
  };

  before(async () => {
    scripted = await proxyWithSkills(SKILLS, 'productivity');
    ({ upstream, proxy } = scripted);
  });
  after(() => scripted?.close());

  test('an English request about my child finds the Japanese skill with 子供, the everyday Japanese word, not 小人 (frequent in Chinese for another sense)', async () => {
    // The child tells the two apart: homework and diary alone are in both. ("my child's diary" alone is
    // two everyday words, 1.08 rare terms of evidence under the translated gate's 1.2: the same skills
    // written in English get 1.47 under 1.5 and nothing either.)
    await ask(proxy, "my child's homework and diary", 'ja-r1');
    assert.deepEqual(injectedSkills(upstream), ['kodomo-shukudai']);
  });
});

describe('own-language search keys: an English user finds an English skill asked for in other words than its author used', () => {
  let scripted: ScriptedProxy;
  let upstream: ScriptedUpstream;
  let proxy: ProxyHandle;
  const keyCalls: string[] = [];
  /** Words none of the starter skills uses: the refactoring skill speaks of "legacy code" and "behavior". */
  const OTHER_WORDS = 'this spaghetti mess nobody dares to touch, where do I even begin untangling it';

  before(async () => {
    scripted = await refactoringKeysProxy(['spaghetti code', 'untangling a mess', 'code nobody dares touch'], keyCalls);
    ({ upstream, proxy } = scripted);
  });
  after(() => scripted?.close());

  test('the search keys job asks for keys in the skills own language, and the request in other words then gets the skill', async () => {
    await ask(proxy, OTHER_WORDS, 'en-1');
    assert.deepEqual(injectedSkills(upstream), [], 'the skill text alone should not find it');
    // A second English request: the user is now seen writing English, the language of every skill.
    await ask(proxy, 'what is a good name for a cat', 'en-2');
    const keys = await waitFor(async () => {
      const response = await fetch(`${proxy.url}/v1/skills/safe-refactoring`);
      const body = (await response.json()) as { search_keys: Record<string, string[]> };
      return body.search_keys['en'];
    }, 30_000);
    assert.deepEqual(keys, ['spaghetti code', 'untangling a mess', 'code nobody dares touch']);
    assert.ok(
      keyCalls.some((call) => call.includes('### safe-refactoring (keys in: en)')),
      keyCalls.join('\n---\n'),
    );
    await ask(proxy, OTHER_WORDS, 'en-3');
    assert.deepEqual(injectedSkills(upstream), ['safe-refactoring']);
    await ask(proxy, 'what is a good name for a cat', 'en-4');
    assert.deepEqual(injectedSkills(upstream), [], 'an off-topic request still gets nothing');
  });
});

describe('skills.search_keys: false', () => {
  let scripted: ScriptedProxy;
  let upstream: ScriptedUpstream;
  let proxy: ProxyHandle;

  before(async () => {
    const home = tempHome();
    englishOnlyStarter(join(home, 'skills'));
    const config = { ...SKILLS_ONLY, skills: { auto_evolve: false, search_keys: false } };
    scripted = await startScriptedProxy({ home, upstreamHandler: learningAwareUpstream({}), config });
    ({ upstream, proxy } = scripted);
  });
  after(() => scripted?.close());

  test('asks the model for no search keys, whatever languages the user writes', async () => {
    for (const [index, text] of [
      'how do I squash my git commits',
      'write a SQL query for monthly totals',
      '两个分支合并冲突了怎么办',
      '帮我写一个 SQL 查询',
    ].entries())
      await ask(proxy, text, `off-${index}`);
    // A turn in a language the keys do not cover would queue the job within 2 s.
    await new Promise((resolveWait) => setTimeout(resolveWait, 3_000));
    await waitFor(async () => {
      const { queue } = (await (await fetch(`${proxy.url}/status`)).json()) as { queue: { queued: number; leased: number } };
      return queue.queued + queue.leased === 0;
    }, 10_000);
    assert.equal(upstream.modelRequests().filter(isSearchKeysCall).length, 0);
  });
});
