import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { silentLogger } from '../src/logging/index.js';
import { SkillLibrary } from '../src/skills/library.js';
import { SkillRetriever } from '../src/skills/retrieval.js';
import { SkillSearchIndex } from '../src/skills/search-index.js';
import { STARTER_DIR } from '../src/skills/index.js';
import type { Skill } from '../src/skills/types.js';
import { uniqueTerms } from '../src/text/index.js';
import { englishKey, katakanaKey } from '../src/text/loanwords.js';

interface LabelledQuery {
  query: string;
  language: 'en' | 'zh' | 'ja';
  relevant: string[];
  irrelevant: string[];
}

const cases = JSON.parse(readFileSync(new URL('./fixtures/skill-retrieval.json', import.meta.url), 'utf8')) as LabelledQuery[];

function retriever(): SkillRetriever {
  const library = new SkillLibrary(STARTER_DIR, silentLogger());
  library.scan();
  const index = new SkillSearchIndex();
  index.sync(library.all());
  return new SkillRetriever(library, index, undefined, undefined, { mode: 'template', topK: 3, minRelevance: 0.35 }, silentLogger());
}

/** The names of the skills a bank written by others (`test/fixtures/<set>-skills/bank`) gives a request: keyword mode, top_k 6, the default threshold. */
function bankSkills(set: string): (request: string) => string[] {
  return directorySkills(new URL(`./fixtures/${set}-skills/bank`, import.meta.url).pathname);
}

/** The names of the skills the library in `dir` gives a request: keyword mode, top_k 6, the default threshold. */
function directorySkills(dir: string): (request: string) => string[] {
  const library = new SkillLibrary(dir, silentLogger());
  library.scan();
  const index = new SkillSearchIndex();
  index.sync(library.all());
  const search = new SkillRetriever(library, index, undefined, undefined, { mode: 'template', topK: 6, minRelevance: 0.35 }, silentLogger());
  return (request) => search.retrieve(request).map((hit) => hit.skill.name);
}

describe('skill retrieval on the labelled set (starter bank, keyword mode, default threshold)', () => {
  const search = retriever();
  const results = cases.map((item) => ({ item, found: (search.retrieve(item.query) as Array<{ skill: { name: string } }>).map((hit) => hit.skill.name) }));

  test('precision and recall hold in English, Chinese and Japanese', (t) => {
    const byLanguage = new Map<string, { truePositives: number; falsePositives: number; falseNegatives: number }>();
    for (const { item, found } of results) {
      const counts = byLanguage.get(item.language) ?? { truePositives: 0, falsePositives: 0, falseNegatives: 0 };
      for (const name of found) {
        if (item.relevant.includes(name)) counts.truePositives++;
        else counts.falsePositives++;
      }
      for (const name of item.relevant) if (!found.includes(name)) counts.falseNegatives++;
      byLanguage.set(item.language, counts);
    }
    let truePositives = 0;
    let falsePositives = 0;
    let falseNegatives = 0;
    for (const [language, counts] of byLanguage) {
      const precision = counts.truePositives / Math.max(1, counts.truePositives + counts.falsePositives);
      const recall = counts.truePositives / Math.max(1, counts.truePositives + counts.falseNegatives);
      t.diagnostic(
        `${language}: precision ${precision.toFixed(3)}, recall ${recall.toFixed(3)} (${cases.filter((item) => item.language === language).length} queries)`,
      );
      truePositives += counts.truePositives;
      falsePositives += counts.falsePositives;
      falseNegatives += counts.falseNegatives;
    }
    const precision = truePositives / (truePositives + falsePositives);
    const recall = truePositives / (truePositives + falseNegatives);
    t.diagnostic(`all ${cases.length} queries: precision ${precision.toFixed(3)}, recall ${recall.toFixed(3)}`);
    assert.ok(precision >= 0.75, `precision ${precision.toFixed(3)} fell below 0.75`);
    assert.ok(recall >= 0.85, `recall ${recall.toFixed(3)} fell below 0.85`);
    for (const language of ['zh', 'ja']) {
      const counts = byLanguage.get(language)!;
      assert.ok(counts.truePositives / (counts.truePositives + counts.falseNegatives) >= 0.8, `${language} recall too low`);
    }
  });

  test('no query ever gets a skill labelled as clearly irrelevant to it', () => {
    const violations = results.flatMap(({ item, found }) => found.filter((name) => item.irrelevant.includes(name)).map((name) => `${item.query} -> ${name}`));
    assert.deepEqual(violations, []);
  });

  test('off-topic requests (a turn about sourdough, small talk) get no skill at all', () => {
    const offTopic = results.filter(({ item }) => item.relevant.length === 0);
    assert.ok(offTopic.length >= 6);
    for (const { item, found } of offTopic) assert.deepEqual(found, [], `"${item.query}" got ${found.join(', ')}`);
    assert.deepEqual((search.retrieve('how long should I proof sourdough overnight') as unknown[]).length, 0);
  });

  test('recent turns help a vague follow-up find the topic, but never find a skill alone', () => {
    const vague = 'ok and what about the remote one?';
    assert.deepEqual(search.retrieve(vague), []);
    const followUp = (
      search.retrieve('and how do I squash the last three commits?', 'my git branch history is messy before the merge') as Array<{ skill: { name: string } }>
    ).map((hit) => hit.skill.name);
    assert.ok(followUp.includes('git-commit-hygiene'));
  });
});

describe('skill retrieval over a bank written by others (the dev2 set: English skills, some with title-only descriptions)', () => {
  const names = bankSkills('dev2');

  test('a glossary word the segmenter cut in two ("优化", "镜像") counts as one specific translation, so a Chinese Docker request finds the Docker skill', () => {
    assert.deepEqual(names('Dockerfile 构建太慢了，镜像也很大，帮我优化一下'), ['docker-development']);
  });

  test('a Chinese request tied to a skill by one word alone (a lease "合同") gets no skill; one asking for a proposal and a contract gets the contract skill', () => {
    assert.deepEqual(names('租房合同到期了，房东要涨租，我该怎么谈？'), []);
    assert.deepEqual(names('给客户写一份项目提案和外包合同'), ['contract-and-proposal-writer']);
  });

  test('dictionary senses of common words met only in skill bodies ("生成" → generate, "记录" → record) inject no unrelated skill', () => {
    const found = names('根据最近的提交记录生成更新日志');
    assert.deepEqual(
      found.filter((name) => !['changelog-generator', 'release-manager'].includes(name)),
      [],
    );
  });
});

describe('skill retrieval over a bank written by others (the dev3 set: long trigger-heavy English descriptions)', () => {
  const names = bankSkills('dev3');

  test("a request that shares only one word with a skill's name (pandas at the zoo, a mower's spark plug) gets no skill; a request about the skill, or the word alone, gets it", () => {
    assert.deepEqual(names('when is the best time of day to see the pandas awake at the zoo?'), []);
    assert.deepEqual(names('the spark plug in my lawn mower needs replacing, what size do I buy?'), []);
    assert.deepEqual(names('merge two pandas DataFrames on customer id and date, then fill the gaps'), ['pandas-pro']);
    assert.deepEqual(names('pandas'), ['pandas-pro']);
  });

  test('of two skills that cover a request alike in their descriptions, the one whose whole text is far less about it (BM25) is left out', () => {
    assert.deepEqual(
      names('we need versioned URLs for invoices and one consistent error body across endpoints; what should the resources and paging look like?'),
      ['api-designer'],
    );
    assert.deepEqual(names("pull every bug on my team's board that's been open more than two weeks and summarise them on a wiki page for the retro"), [
      'atlassian-mcp',
    ]);
  });

  test('a request word in another form than the skill\'s ("auditor" for "audit") finds the skill', () => {
    assert.deepEqual(names('the SOC 2 auditor arrives next month. go over the repo and our cloud setup for holes and rank what you find by how bad it is'), [
      'security-reviewer',
    ]);
  });
});

/** The names of the skills a library of `skills` (name → a one-line description and body) gives a request: keyword mode, top_k 6, the default threshold. */
function librarySkills(skills: Record<string, string>): (request: string) => string[] {
  const dir = mkdtempSync(join(tmpdir(), 'metaclaw-skills-'));
  for (const [name, text] of Object.entries(skills)) {
    mkdirSync(join(dir, name));
    writeFileSync(join(dir, name, 'SKILL.md'), `---\nname: ${name}\ndescription: "${text}"\n---\n\n# ${name}\n\n${text}\n`);
  }
  return directorySkills(dir);
}

describe('a library written in Japanese answers an English request as the same library written in English does', () => {
  // A child's homework and diary, and their grading; the Japanese skills named in romaji, so their names hold no English word.
  // The requests lean on words the glossary translates: "grading" it does not give as 採点, so "diary grading" finds the English skill only.
  const japanese = librarySkills({
    'kodomo-shukudai': '子供の宿題と日記は、夕食の前にチェックします。',
    'shukudai-saiten': '宿題と日記の採点は、先生が翌日までに返します。',
  });
  const english = librarySkills({
    'child-homework': "Check the child's homework and diary before dinner.",
    'homework-grading': 'The teacher returns the grading of homework and diary by the next day.',
  });
  const twin: Record<string, string> = { 'kodomo-shukudai': 'child-homework', 'shukudai-saiten': 'homework-grading' };

  test('the background statistics count Japanese words on the scale of their English translations: the same requests get the same skills', () => {
    for (const request of ["my child's diary", "my child's homework and diary", 'homework and diary grading by the teacher', 'the teacher'])
      assert.deepEqual(
        japanese(request).map((name) => twin[name]),
        english(request),
        request,
      );
  });
});

describe('katakana loanwords no dictionary holds, matched to English words by sound', () => {
  test('a katakana word and the English word it borrows share a sound key (vowels Japanese adds, l/r, v/b, a silent r set aside)', () => {
    for (const [katakana, english] of [
      ['ランブック', 'runbook'],
      ['ポストモーテム', 'postmortem'],
      ['インシデント', 'incident'],
      ['メトリクス', 'metrics'],
      ['シャッフル', 'shuffle'],
      ['タイポグラフィ', 'typography'],
      ['マイグレーション', 'migration'],
      ['ダッシュボード', 'dashboard'],
    ] as const)
      assert.equal(katakanaKey(katakana), englishKey(english), `${katakana} / ${english}`);
    assert.notEqual(katakanaKey('インシデント'), englishKey('instance'));
    assert.equal(katakanaKey('incident'), undefined);
  });

  test('a Japanese request whose key word is a loanword the glossary lacks (ポストモーテム) finds the English skill named for it (the dev set)', () => {
    assert.deepEqual(bankSkills('dev')('昨日の障害のポストモーテムを書きたい'), ['incident-postmortem']);
  });
  test('a loanword the segmenter cut in pieces (ラン|ブック, "run" and "book" to the glossary) is also looked up whole and finds the runbook skill (the dev2 set)', () => {
    assert.deepEqual(bankSkills('dev2')('決済サービスの運用手順書（ランブック）を作成してほしい'), ['runbook-generator']);
  });
});

describe("skill search index: what stands for a skill's description", () => {
  const skill = (name: string, description: string, body: string): Skill => ({
    name,
    description,
    category: 'general',
    body,
    version: 1,
    origin: 'user',
    createdAt: undefined,
    updatedAt: undefined,
    generation: undefined,
    sourceSessions: [],
    extra: {},
    path: `/skills/${name}/SKILL.md`,
    contentHash: name,
    bodyTokens: 0,
    summaryTokens: 0,
  });
  const summary = 'Writes on-call runbooks for a service: health checks, restart steps, escalation and rollback.';

  test('the top of the body stands in for a description that only repeats the title, so the skill covers a request as well as one that says it in its description', () => {
    const index = new SkillSearchIndex();
    index.sync([
      skill('runbook-generator', 'Runbook Generator', `# Runbook Generator\n\n${summary}\n\nMore detail follows.`),
      skill('service-runbooks', summary, `# Service runbooks\n\n${summary}\n\nMore detail follows.`),
    ]);
    const hits = index.search(['on-call', 'runbook', 'restart', 'rollback'].flatMap((word) => [...uniqueTerms(word)]));
    const coverage = (name: string) => hits.find((hit) => hit.name === name)!.coverage;
    assert.ok(
      Math.abs(coverage('runbook-generator') - coverage('service-runbooks')) < 0.05,
      `${coverage('runbook-generator')} vs ${coverage('service-runbooks')}`,
    );
  });

  test('a category its author chose counts as a description does, where the body only counts for less', () => {
    const index = new SkillSearchIndex();
    const body = '# Summaries\n\nExtracts the problem, method and results of an article.';
    index.sync([
      { ...skill('paper-notes', 'Summarises an article.', body), category: 'research' },
      skill('paper-digest', 'Summarises a research article.', body),
    ]);
    const hits = index.search([...uniqueTerms('research article')]);
    const coverage = (name: string) => hits.find((hit) => hit.name === name)!.coverage;
    assert.ok(Math.abs(coverage('paper-notes') - coverage('paper-digest')) < 0.05, `${coverage('paper-notes')} vs ${coverage('paper-digest')}`);
  });

  test('words a long body says once count for little: a pull request review gets the review skill, not the git guide whose 900-term body mentions merge, password and email; a sourdough question gets nothing (the dev7 set, full bodies)', () => {
    const search = bankSkills('dev7');
    assert.deepEqual(search('Can you look over this pull request before I merge it? It adds password reset through links sent by email.'), ['code-reviewer']);
    assert.deepEqual(
      search("My sourdough comes out flat every time. I've already changed the flour and the water temperature. How do I work out which thing is the problem?"),
      [],
    );
  });

  test('a word a short body says once still counts as before', () => {
    const index = new SkillSearchIndex();
    index.sync([
      skill(
        'release-notes',
        'Writes the notes for a software release.',
        '# Release notes\n\nList what changed, credit contributors, and flag breaking changes.',
      ),
    ]);
    const once = index.search([...uniqueTerms('release notes that flag breaking changes')])[0]!;
    const twice = new SkillSearchIndex();
    twice.sync([
      skill(
        'release-notes',
        'Writes the notes for a software release.',
        '# Release notes\n\nList what changed, credit contributors, flag breaking changes, breaking changes.',
      ),
    ]);
    assert.equal(once.coverage.toFixed(6), twice.search([...uniqueTerms('release notes that flag breaking changes')])[0]!.coverage.toFixed(6));
  });

  test("forms of a word the stemmer leaves apart (coverage / cover, summarize / summarise) match; a compound's first word (checks / checkout) does not", () => {
    const index = new SkillSearchIndex();
    index.sync([
      skill('test-coverage', 'Measures test coverage and will summarize which branches no test reaches.', '# Coverage'),
      skill('order-checks', 'Runs sanity checks on orders before they ship.', '# Checks'),
    ]);
    const coverage = (request: string, name: string) => index.search([...uniqueTerms(request)]).find((hit) => hit.name === name)?.coverage ?? 0;
    assert.ok(coverage('branches cover', 'test-coverage') > 0.9, `cover: ${coverage('branches cover', 'test-coverage')}`);
    assert.ok(coverage('branches summarise', 'test-coverage') > 0.9, `summarise: ${coverage('branches summarise', 'test-coverage')}`);
    assert.ok(coverage('orders checkout', 'order-checks') < 0.6, `checkout: ${coverage('orders checkout', 'order-checks')}`);
  });
});
