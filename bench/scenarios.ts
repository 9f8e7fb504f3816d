import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import type http from 'node:http';
import { join } from 'node:path';
import { silentLogger } from '../src/logging/index.js';
import { SkillLibrary } from '../src/skills/library.js';
import { renderSkills } from '../src/skills/render.js';
import { SkillRetriever } from '../src/skills/retrieval.js';
import { SkillSearchIndex } from '../src/skills/search-index.js';
import { importSkills, SkillsService, STARTER_DIR } from '../src/skills/index.js';
import { openDatabase } from '../src/store/index.js';
import { MemoryRetriever } from '../src/memory/retrieval.js';
import { renderMemory } from '../src/memory/render.js';
import { MemoryStore } from '../src/memory/store.js';
import { DEV_EXTRACTION, measureMemoryRecall, RECALL_FIXTURES, renderRecall, type RecallReport } from './memory-recall.js';
import { DEV_ANALYST_RULES, DEV_RULES, HELDOUT_RULES, measureRuleScenarios, renderRules } from './memory-rules.js';
import { measureCrossLingual, renderCrossLingual } from './cross-lingual.js';
import { rlScenario } from './rl.js';
import { hasModelKeys, measureSkillRetrieval, renderSkillRetrieval } from './skill-retrieval-quality.js';
import { summarize } from './stats.js';

/** A report section added by a part of the system (skills, memory) to BENCHMARKS.md. */
export interface ExtraScenarioResult {
  title: string;
  lines: string[];
  data: unknown;
}

export interface ScenarioContext {
  home: string;
  agent: http.Agent;
  small: string;
  scale: number;
  upstream: string;
  startProxy(name: string, upstream: string, config?: Record<string, unknown>): Promise<{ url: string; pid: number; home: string }>;
  sequential(url: string, body: string, count: number, agent: http.Agent): Promise<number[]>;
  interleaved(
    measure: (url: string) => Promise<number[]>,
    direct: string,
    proxy: string,
    rounds: number,
  ): Promise<{ added: { p50: number; p99: number }; proxy: { p50: number; p99: number }; direct: { p50: number; p99: number } }>;
  log(message: string): void;
}

/** Scenarios for retrieval and injection; each part of the system adds its own here. */
export async function extraScenarios(context: ScenarioContext): Promise<ExtraScenarioResult[]> {
  return [
    skillRetrievalQualityScenario(context),
    await skillRetrievalScenario(context),
    await skillsThroughProxyScenario(context),
    await memoryRetrievalScenario(context),
    await memoryRecallQualityScenario(context),
    await memoryRulesScenario(context),
    crossLingualScenario(context),
    await rlScenario(context),
  ];
}

/* ---------- cross-lingual skill retrieval (glossary only) ---------- */

function crossLingualScenario(context: ScenarioContext): ExtraScenarioResult {
  context.log('cross-lingual skill retrieval: Chinese and Japanese recall against English');
  const report = measureCrossLingual({ heldout: true });
  return { title: 'Cross-lingual skill retrieval (Chinese and Japanese requests, English skills)', lines: renderCrossLingual(report), data: report };
}

/* ---------- skills: retrieval quality on labelled sets ---------- */

function skillRetrievalQualityScenario(context: ScenarioContext): ExtraScenarioResult {
  context.log('skill retrieval precision and recall on the tuned, held-out, dev, dev2, dev3, dev4, dev5, dev6 and dev7 sets');
  // Each set as on day one (nothing learned), then, where its model keys are recorded, with them.
  const reports = (['tuned', 'held-out', 'dev', 'dev2', 'dev3', 'dev4', 'dev5', 'dev6', 'dev7'] as const).flatMap((set) => [
    measureSkillRetrieval(set),
    ...(hasModelKeys(set) ? [measureSkillRetrieval(set, true)] : []),
  ]);
  return { title: 'Skill retrieval quality (labelled requests, by language)', lines: renderSkillRetrieval(reports), data: reports };
}

/* ---------- skills: retrieval + rendering with big libraries (exported to run alone) ---------- */

export async function skillRetrievalScenario(context: ScenarioContext): Promise<ExtraScenarioResult> {
  const rows: string[] = [];
  const data: Record<string, unknown> = {};
  for (const size of [1_000, 10_000]) {
    context.log(`skills retrieval with ${size} skills`);
    const dir = join(context.home, `library-${size}`);
    writeSyntheticLibrary(dir, size);
    const library = new SkillLibrary(dir, silentLogger());
    const loadStarted = performance.now();
    library.scan();
    const index = new SkillSearchIndex();
    index.sync(library.all());
    const indexMs = performance.now() - loadStarted;
    const retriever = new SkillRetriever(library, index, undefined, undefined, { mode: 'template', topK: 6, minRelevance: 0.35 }, silentLogger());
    const queries = syntheticQueries(400);
    const samples: number[] = [];
    let injected = 0;
    for (let round = 0; round < 3; round++) {
      for (const query of queries) {
        const started = performance.now();
        const found = retriever.retrieve(query.text, query.context) as Parameters<typeof renderSkills>[0];
        const rendered = renderSkills(found, { maxTokens: 1_500, fullBodyTopN: 2 });
        samples.push(performance.now() - started);
        if (round === 0 && rendered) injected++;
      }
    }
    const { p50, p99 } = summarize(samples);
    data[String(size)] = { p50, p99, indexMs, queries: queries.length, injectedShare: injected / queries.length };
    rows.push(
      `| ${size.toLocaleString('en')} | ${p50.toFixed(3)} | ${p99.toFixed(3)} | ${size === 1_000 ? '≤ 2' : '≤ 10'} | ${(indexMs / 1000).toFixed(1)} s | ${Math.round((injected / queries.length) * 100)} % |`,
    );
    rmSync(dir, { recursive: true, force: true });
  }
  return {
    title: 'Skill retrieval and rendering per request (in process, keyword mode)',
    lines: [
      'Synthetic libraries (names, descriptions and bodies drawn from a 4,000-word vocabulary), 400 queries × 3 rounds, top_k 6, full bodies for the best 2, 1,500-token budget. The index is built once at start-up (files → the in-memory BM25F index).',
      '',
      '| skills | p50 ms | p99 ms | aim p50 | start-up index build | queries that got skills |',
      '|---|---|---|---|---|---|',
      ...rows,
    ],
    data,
  };
}

async function skillsThroughProxyScenario(context: ScenarioContext): Promise<ExtraScenarioResult> {
  context.log('proxy latency with the starter skills on, next to skills off');
  const skillsHome = join(context.home, 'skills-on-home');
  mkdirSync(skillsHome, { recursive: true });
  // Install the starter bank the way `metaclaw skills install-starter` does, into the home the proxy will use.
  const db = openDatabase(join(skillsHome, 'metaclaw.db'));
  const service = new SkillsService({
    db,
    logger: silentLogger(),
    settings: {
      enabled: true,
      dir: join(skillsHome, 'skills'),
      retrievalMode: 'template',
      topK: 6,
      fullBodyTopN: 2,
      maxTokens: 1_500,
      minRelevance: 0.35,
      autoEvolve: false,
      searchKeys: false,
      evolveEveryNTurns: 0,
      review: 'auto',
      maxNewSkills: 3,
      embedding: { apiBase: '', apiKey: '', model: '' },
      evolver: { apiBase: '', apiKey: '', model: '' },
    },
  });
  service.open({ watch: false });
  importSkills(service, STARTER_DIR, { origin: 'starter', action: 'install' });
  db.close();
  const withSkills = await context.startProxy('skills-on-home', context.upstream, { skills: { auto_evolve: false }, memory: { enabled: false } });
  const withoutSkills = await context.startProxy('skills-off', context.upstream, { skills: { enabled: false }, memory: { enabled: false } });
  const matching = JSON.stringify({
    model: 'bench-model',
    messages: [
      { role: 'system', content: 'You are a coding agent.' },
      { role: 'user', content: 'my git commit history is a mess, how do I squash commits before merging?' },
    ],
  });
  const count = Math.round(400 * context.scale);
  const warm = async (url: string) => context.sequential(`${url}/v1/chat/completions`, matching, 100, context.agent);
  await warm(withSkills.url);
  await warm(withoutSkills.url);
  const pair = await context.interleaved((url) => context.sequential(url, matching, count, context.agent), withoutSkills.url, withSkills.url, 4);
  const direct = await context.interleaved((url) => context.sequential(url, matching, count, context.agent), context.upstream, withoutSkills.url, 2);
  return {
    title: 'Proxy latency with skills on (starter bank, 42 skills; a request that gets a skill injected)',
    lines: [
      '| compared | baseline p50 / p99 | with skills p50 / p99 | added p50 / p99 |',
      '|---|---|---|---|',
      `| plain proxy (skills and memory off) vs skills on | ${pair.direct.p50.toFixed(3)} / ${pair.direct.p99.toFixed(3)} | ${pair.proxy.p50.toFixed(3)} / ${pair.proxy.p99.toFixed(3)} | **${pair.added.p50.toFixed(3)}** / ${pair.added.p99.toFixed(3)} |`,
      `| direct upstream vs plain proxy (same run) | ${direct.direct.p50.toFixed(3)} / ${direct.direct.p99.toFixed(3)} | ${direct.proxy.p50.toFixed(3)} / ${direct.proxy.p99.toFixed(3)} | ${direct.added.p50.toFixed(3)} / ${direct.added.p99.toFixed(3)} |`,
      '',
      'The skills row includes retrieval, rendering, the larger body forwarded upstream (about 500 more tokens) and the credit rows written with the turn.',
    ],
    data: { skillsOnVsOff: pair, directVsPlain: direct },
  };
}

/* ---------- memory: recall + rendering with big scopes ---------- */

async function memoryRetrievalScenario(context: ScenarioContext): Promise<ExtraScenarioResult> {
  const rows: string[] = [];
  const data: Record<string, unknown> = {};
  for (const size of context.scale < 1 ? [10_000, 30_000] : [10_000, 100_000]) {
    context.log(`memory recall with ${size} units in one scope`);
    const path = join(context.home, `memory-${size}.db`);
    const db = openDatabase(path);
    const store = new MemoryStore(db);
    const next = random(size + 7);
    const started = performance.now();
    const day = 86_400_000;
    db.transaction(() => {
      for (let index = 0; index < size; index++) {
        const type = index % 10 === 0 ? 'preference' : index % 3 === 0 ? 'semantic' : 'episodic';
        store.add(
          {
            scope: 'bench',
            type,
            content: `${phrase(next, 6 + Math.floor(next() * 20))}.`,
            origin: type === 'episodic' ? 'raw_turn' : 'extractor',
            speaker: type === 'episodic' ? (index % 2 === 0 ? 'user' : 'assistant') : null,
            // Raw turns come in sessions of about a dozen: each is indexed with the turns next to it.
            sourceSession: type === 'episodic' ? `session-${Math.floor(index / 12)}` : null,
            importance: next(),
            observedAt: Date.now() - Math.floor(next() * 120) * day,
          },
          type === 'episodic' ? { rawKey: `k${index}` } : {},
        );
      }
    })();
    const buildMs = performance.now() - started;
    const retriever = new MemoryRetriever(store, undefined, silentLogger());
    const queries = syntheticQueries(300);
    const samples: number[] = [];
    for (let round = 0; round < 2; round++) {
      for (const query of queries) {
        const begin = performance.now();
        const hits = retriever.recall({ scope: 'bench', query: query.text, limit: 6, excludeCore: true, minRelevance: 0.3 }) as Parameters<
          typeof renderMemory
        >[1];
        renderMemory(store.coreUnits('bench').slice(0, 10), hits, { coreMaxTokens: 400, maxTokens: 800 });
        samples.push(performance.now() - begin);
      }
    }
    const { p50, p99 } = summarize(samples);
    data[String(size)] = { p50, p99, buildMs };
    rows.push(`| ${size.toLocaleString('en')} | ${p50.toFixed(3)} | ${p99.toFixed(3)} | ${size <= 10_000 ? '≤ 5' : '≤ 25'} |`);
    db.close();
    rmSync(path, { force: true });
    rmSync(`${path}-wal`, { force: true });
    rmSync(`${path}-shm`, { force: true });
  }
  return {
    title: 'Memory recall and rendering per request (in process, one scope, keyword mode)',
    lines: [
      'Synthetic units (6–25 words from the same 4,000-word vocabulary; a tenth preferences, the rest facts and raw turns) in one scope of a SQLite file; 300 queries × 2 rounds, top_k 6, 800 + 400 tokens. Includes the FTS5 query, IDF lookups, scoring and rendering of the recalled and core blocks.',
      '',
      '| units in the scope | p50 ms | p99 ms | aim p50 |',
      '|---|---|---|---|',
      ...rows,
    ],
    data,
  };
}

/* ---------- memory: recall quality on a labelled history ---------- */

async function memoryRecallQualityScenario(context: ScenarioContext): Promise<ExtraScenarioResult> {
  context.log('memory recall@5/@10 on the labelled histories (tuned, the dev sets, the check set, held-out), next to BM25 baselines');
  const dir = join(context.home, 'memory-recall');
  mkdirSync(dir, { recursive: true });
  const reports: RecallReport[] = [];
  for (const fixture of RECALL_FIXTURES) {
    reports.push(await measureMemoryRecall(fixture, { workDir: dir }));
    if (fixture.key === 'dev') reports.push(await measureMemoryRecall(fixture, { workDir: dir, extraction: DEV_EXTRACTION }));
  }
  rmSync(dir, { recursive: true, force: true });
  return {
    title: 'Memory recall quality (recall@5 and @10, labelled histories)',
    lines: renderRecall(reports),
    data: reports as unknown as Record<string, unknown>,
  };
}

/* ---------- memory: standing rules learned from corrections ---------- */

async function memoryRulesScenario(context: ScenarioContext): Promise<ExtraScenarioResult> {
  context.log('standing rules over 30 days: rule recall, leaks, core block');
  const dir = join(context.home, 'memory-rules');
  mkdirSync(dir, { recursive: true });
  const reports = await measureRuleScenarios(
    [
      ['dev: app developer', DEV_RULES],
      ['dev: analyst', DEV_ANALYST_RULES],
      ['held-out: 30 days', HELDOUT_RULES],
    ],
    dir,
  );
  rmSync(dir, { recursive: true, force: true });
  return {
    title: 'Standing rules learned from corrections (multi-week scenarios)',
    lines: renderRules(reports),
    data: reports as unknown as Record<string, unknown>,
  };
}

/* ---------- synthetic libraries ---------- */

const SYLLABLES = ['ka', 'lo', 'mi', 'ne', 'ru', 'sa', 'to', 'vi', 'ze', 'po', 'qu', 'an', 'el', 'or', 'is', 'ut', 'ba', 'de', 'fi', 'go'];

function word(index: number): string {
  let value = index + 7;
  let text = '';
  do {
    text += SYLLABLES[value % SYLLABLES.length];
    value = Math.floor(value / SYLLABLES.length);
  } while (value > 0);
  return text;
}

/** A deterministic pseudo-random stream, so every run benchmarks the same library. */
function random(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state * 1_103_515_245 + 12_345) % 2_147_483_648;
    return state / 2_147_483_648;
  };
}

const VOCABULARY = Array.from({ length: 4_000 }, (_, index) => word(index));

function phrase(next: () => number, length: number): string {
  return Array.from({ length }, () => VOCABULARY[Math.floor(Math.pow(next(), 1.6) * VOCABULARY.length)]!).join(' ');
}

function writeSyntheticLibrary(dir: string, size: number): void {
  const next = random(size);
  for (let index = 0; index < size; index++) {
    const name = `skill-${index}-${word(index)}`;
    mkdirSync(join(dir, name), { recursive: true });
    const body = `# ${phrase(next, 4)}\n\n**When to use:** ${phrase(next, 14)}\n\n**Steps**\n${Array.from({ length: 6 }, (_, step) => `${step + 1}. **${phrase(next, 3)}.** ${phrase(next, 18)}`).join('\n')}\n\n**Avoid**\n- ${phrase(next, 10)}\n- ${phrase(next, 10)}`;
    writeFileSync(join(dir, name, 'SKILL.md'), `---\nname: ${name}\ndescription: "Use when ${phrase(next, 20)}"\ncategory: general\n---\n\n${body}\n`);
  }
}

function syntheticQueries(count: number): Array<{ text: string; context: string }> {
  const next = random(42);
  return Array.from({ length: count }, () => ({ text: `how do I ${phrase(next, 8)}?`, context: phrase(next, 12) }));
}
