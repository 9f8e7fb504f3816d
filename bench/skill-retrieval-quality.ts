/**
 * Skill retrieval quality on labelled request sets, by language: precision, recall, skills injected
 * per turn and off-topic requests that got a skill. Keyword mode, the default threshold and top_k,
 * nothing learned (no search keys, no embeddings).
 *
 * - tuned: `test/fixtures/skill-retrieval.json` over `skills-starter/` (written with the starter bank: fit)
 * - held-out: `test/fixtures/heldout-skills/` (a bank written by others, never tuned on: generalisation)
 * - dev: `test/fixtures/dev-skills/` (another bank by others, for tuning)
 * - dev2: `test/fixtures/dev2-skills/` (a third bank by others, for tuning; built when tuned and dev were saturated)
 * - dev3: `test/fixtures/dev3-skills/` (a fourth bank by others, English-heavy, for tuning; built when dev2 was saturated)
 * - dev4: `test/fixtures/dev4-skills/` (a fifth bank by others, paraphrases and off-topic requests sharing a generic word)
 * - dev5: `test/fixtures/dev5-skills/` (a sixth bank by others, a newsroom's; built before any tuning on it)
 * - dev6: `test/fixtures/dev6-skills/` (a seventh bank by others, a marketer's; built before any tuning on it)
 * - dev7: `test/fixtures/dev7-skills/` (an eighth bank by others, generic process skills; built before any tuning on it)
 *
 * A set whose folder holds `model-keys.json` (search keys a model wrote for its bank from the search
 * keys prompt alone, never from the requests; see the set's README) is run a second time with those
 * keys indexed, as a user's library is once the search keys job has run ("keys learned" rows).
 *
 * Standalone: `node --import tsx bench/skill-retrieval-quality.ts tuned dev` (name the sets to run;
 * `--keys` adds the keys-learned rows).
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { z } from 'zod';
import { loadConfig } from '../src/config/index.js';
import { silentLogger } from '../src/logging/index.js';
import { SkillLibrary } from '../src/skills/library.js';
import { SkillRetriever } from '../src/skills/retrieval.js';
import { SkillSearchIndex } from '../src/skills/search-index.js';
import { STARTER_DIR } from '../src/skills/index.js';
import { skillsSettings } from '../src/runtime/settings.js';
import { summarize } from './stats.js';

const FIXTURES = new URL('../test/fixtures/', import.meta.url);

export const SKILL_SETS = {
  tuned: { requests: new URL('skill-retrieval.json', FIXTURES), bank: STARTER_DIR, about: 'tuned: starter bank (42), `test/fixtures/skill-retrieval.json`' },
  'held-out': {
    requests: new URL('heldout-skills/requests.json', FIXTURES),
    bank: new URL('heldout-skills/bank', FIXTURES).pathname,
    about: 'held-out: 58 skills by others, `test/fixtures/heldout-skills/`',
  },
  dev: {
    requests: new URL('dev-skills/requests.json', FIXTURES),
    bank: new URL('dev-skills/bank', FIXTURES).pathname,
    about: 'dev: 35 skills by others, `test/fixtures/dev-skills/`',
  },
  dev2: {
    requests: new URL('dev2-skills/requests.json', FIXTURES),
    bank: new URL('dev2-skills/bank', FIXTURES).pathname,
    about: 'dev2: 43 skills by others, `test/fixtures/dev2-skills/`',
  },
  dev3: {
    requests: new URL('dev3-skills/requests.json', FIXTURES),
    bank: new URL('dev3-skills/bank', FIXTURES).pathname,
    about: 'dev3: 45 skills by others, `test/fixtures/dev3-skills/`',
  },
  dev4: {
    requests: new URL('dev4-skills/requests.json', FIXTURES),
    bank: new URL('dev4-skills/bank', FIXTURES).pathname,
    about: 'dev4: 42 skills by others, `test/fixtures/dev4-skills/`',
  },
  dev5: {
    requests: new URL('dev5-skills/requests.json', FIXTURES),
    bank: new URL('dev5-skills/bank', FIXTURES).pathname,
    about: 'dev5: 38 skills by others, `test/fixtures/dev5-skills/`',
  },
  dev6: {
    requests: new URL('dev6-skills/requests.json', FIXTURES),
    bank: new URL('dev6-skills/bank', FIXTURES).pathname,
    about: 'dev6: 40 skills by others, `test/fixtures/dev6-skills/`',
  },
  dev7: {
    requests: new URL('dev7-skills/requests.json', FIXTURES),
    bank: new URL('dev7-skills/bank', FIXTURES).pathname,
    about: 'dev7: 37 skills by others, `test/fixtures/dev7-skills/`',
  },
} as const;
export type SkillSetName = keyof typeof SKILL_SETS;

const requestsSchema = z.array(
  z.object({ query: z.string().min(1), language: z.enum(['en', 'zh', 'ja']), relevant: z.array(z.string()), irrelevant: z.array(z.string()) }),
);

/** Search keys a model wrote for a set's bank (the search keys job's answers, recorded once). */
const modelKeysSchema = z.object({
  about: z.string(),
  model: z.string(),
  prompt_version: z.number().int(),
  skills: z.array(z.object({ name: z.string(), language: z.string(), keys: z.array(z.string()) })),
});

function modelKeysFile(set: SkillSetName): string {
  return join(dirname(SKILL_SETS[set].bank), 'model-keys.json');
}

/** Whether `set` has recorded model keys to run with. */
export function hasModelKeys(set: SkillSetName): boolean {
  return set !== 'tuned' && existsSync(modelKeysFile(set));
}

/** The recorded keys of `set`'s bank, as the index reads them (every language's keys of a skill). */
export function modelKeys(set: SkillSetName): (skill: { name: string }) => string {
  const recorded = modelKeysSchema.parse(JSON.parse(readFileSync(modelKeysFile(set), 'utf8')));
  const byName = new Map<string, string[]>();
  for (const { name, keys } of recorded.skills) byName.set(name, [...(byName.get(name) ?? []), ...keys]);
  return (skill) => (byName.get(skill.name) ?? []).join('\n');
}

export interface SkillRetrievalCounts {
  requests: number;
  /** Requests labelled off-topic (no relevant skill) and how many of them got a skill anyway. */
  offTopic: number;
  offTopicInjected: number;
  truePositives: number;
  falsePositives: number;
  falseNegatives: number;
  /** Skills labelled "never inject" for a request that got them. */
  forbidden: number;
  injected: number;
}

export interface SkillRetrievalReport {
  set: SkillSetName;
  /** run with the model's recorded search keys indexed */
  withKeys: boolean;
  skills: number;
  byLanguage: Record<string, SkillRetrievalCounts>;
  all: SkillRetrievalCounts;
  p50Ms: number;
}

function emptyCounts(): SkillRetrievalCounts {
  return { requests: 0, offTopic: 0, offTopicInjected: 0, truePositives: 0, falsePositives: 0, falseNegatives: 0, forbidden: 0, injected: 0 };
}

export function measureSkillRetrieval(set: SkillSetName, withKeys = false): SkillRetrievalReport {
  const { requests: file, bank } = SKILL_SETS[set];
  const requests = requestsSchema.parse(JSON.parse(readFileSync(file, 'utf8')));
  const settings = skillsSettings(loadConfig({ env: { METACLAW_HOME: '/nonexistent-metaclaw-home' } }));
  const library = new SkillLibrary(bank, silentLogger());
  library.scan();
  const index = new SkillSearchIndex(withKeys ? modelKeys(set) : undefined);
  index.sync(library.all());
  const retriever = new SkillRetriever(
    library,
    index,
    undefined,
    undefined,
    { mode: 'template', topK: settings.topK, minRelevance: settings.minRelevance },
    silentLogger(),
  );
  const byLanguage: Record<string, SkillRetrievalCounts> = {};
  const all = emptyCounts();
  const samples: number[] = [];
  for (const request of requests) {
    const started = performance.now();
    const found = (retriever.retrieve(request.query) as Array<{ skill: { name: string } }>).map((hit) => hit.skill.name);
    samples.push(performance.now() - started);
    for (const counts of [(byLanguage[request.language] ??= emptyCounts()), all]) {
      counts.requests++;
      counts.injected += found.length;
      if (request.relevant.length === 0) {
        counts.offTopic++;
        if (found.length > 0) counts.offTopicInjected++;
      }
      for (const name of found) {
        if (request.relevant.includes(name)) counts.truePositives++;
        else counts.falsePositives++;
        if (request.irrelevant.includes(name)) counts.forbidden++;
      }
      counts.falseNegatives += request.relevant.filter((name) => !found.includes(name)).length;
    }
  }
  return { set, withKeys, skills: library.size, byLanguage, all, p50Ms: summarize(samples).p50 };
}

const ratio = (part: number, whole: number) => (whole === 0 ? '–' : (part / whole).toFixed(2));

function row(label: string, counts: SkillRetrievalCounts): string {
  const precision = ratio(counts.truePositives, counts.truePositives + counts.falsePositives);
  const recall = ratio(counts.truePositives, counts.truePositives + counts.falseNegatives);
  return `| ${label} | ${counts.requests} | ${precision} | ${recall} | ${(counts.injected / counts.requests).toFixed(2)} | ${counts.offTopicInjected} of ${counts.offTopic} | ${counts.forbidden} |`;
}

export function renderSkillRetrieval(reports: readonly SkillRetrievalReport[]): string[] {
  return [
    'Keyword mode, the default threshold (skills.min_relevance 0.35) and top_k (6), no embeddings. Each set is run as on day one, nothing learned; a set with "keys learned" rows is run again with the search keys a model wrote for its bank (en, zh and ja) from the search keys prompt alone, never from the requests, as the search keys job writes them for a user seen writing those languages (`model-keys.json` in the set\'s folder, made with `bench/skill-keys-prompts.ts`). Precision: injected skills that are labelled relevant; recall: labelled skills that were injected; off-topic: requests labelled as needing no skill that got one; "never" : skills labelled as wrong for the request that were injected.',
    '',
    'Retrieval is tuned on the tuned, dev, dev2, dev3, dev4, dev5, dev6 and dev7 sets only. The held-out set is run to report generalisation; every look at it during tuning is logged, with its numbers, in `test/fixtures/heldout-skills/README.md`.',
    '',
    '| set, language | requests | precision | recall | skills per turn | off-topic injected | "never" injected |',
    '|---|---|---|---|---|---|---|',
    ...reports.flatMap((report) => [
      row(`**${SKILL_SETS[report.set].about}${report.withKeys ? ', keys learned' : ''}**, all`, report.all),
      ...Object.entries(report.byLanguage).map(([language, counts]) => row(`${report.set}${report.withKeys ? ' + keys' : ''}, ${language}`, counts)),
    ]),
  ];
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const withKeys = process.argv.includes('--keys');
  const sets = process.argv.slice(2).filter((arg) => arg !== '--keys') as SkillSetName[];
  if (sets.length === 0 || sets.some((set) => !(set in SKILL_SETS))) throw new Error(`name the sets to run: ${Object.keys(SKILL_SETS).join(', ')}`);
  const reports = sets.flatMap((set) => [measureSkillRetrieval(set), ...(withKeys && hasModelKeys(set) ? [measureSkillRetrieval(set, true)] : [])]);
  process.stdout.write(`${renderSkillRetrieval(reports).join('\n')}\n`);
}
