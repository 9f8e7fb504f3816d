import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import { silentLogger } from '../src/logging/index.js';
import { SkillLibrary } from '../src/skills/library.js';
import { SkillRetriever } from '../src/skills/retrieval.js';
import { SkillSearchIndex } from '../src/skills/search-index.js';
import { STARTER_DIR } from '../src/skills/index.js';

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
