/**
 * Memory recall quality on fixed conversation histories, each with questions asked later and the
 * turns that hold their answers. Our recall is compared, in the same run, with two baselines over
 * the same raw turns: SQLite FTS5 BM25 as it comes (unicode61 tokenizer), and BM25 over our own
 * segmented, stemmed terms (isolates ranking).
 *
 * Nine histories: the tuned one (`test/fixtures/memory-recall.json`), six dev ones written for tuning
 * this part (`test/fixtures/dev-recall/`: the second over 13 months, the third paraphrased and
 * cross-language both ways, the fourth mostly Chinese, the fifth 65 sessions of short chat turns, the sixth
 * a mixed English and Chinese history with paraphrased questions in both directions), a check set in the same folder (many short turns
 * over ten months) that is never tuned on, and a held-out one nobody tunes on
 * (`test/fixtures/heldout-memory/recall-long.json`). The dev history also has extractor output
 * written once (with search keys), for the row that measures recall with an extractor.
 *
 * Standalone: `node --import tsx bench/memory-recall.ts [tuned|dev|dev-long|dev-cross|dev-zh|dev-xl|dev-mix|dev-check|heldout …]` (default: all but heldout).
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { z } from 'zod';
import { loadConfig } from '../src/config/index.js';
import { silentLogger } from '../src/logging/index.js';
import { EXTRACT_JOB, MemoryService } from '../src/memory/index.js';
import type { JobContext } from '../src/learning/index.js';
import { CredentialMemory } from '../src/upstream/index.js';
import { memorySettings } from '../src/runtime/settings.js';
import { openDatabase, type Db } from '../src/store/index.js';
import { tokenize } from '../src/text/index.js';
import { requestLanguages } from '../src/conversation/index.js';
import { recallFixtureProblems } from './recall-fixture-check.js';

const DAY_MS = 86_400_000;
const SCOPE = 'recall-bench';
const KS = [5, 10] as const;

/** A labelled history the bench knows. */
export interface RecallFixture {
  key: 'tuned' | 'dev' | 'dev-long' | 'dev-cross' | 'dev-zh' | 'dev-xl' | 'dev-mix' | 'dev-check' | 'heldout';
  file: URL;
  /** How the report names it. */
  label: string;
  /** Refuse to measure it unless it passes `recallFixtureProblems` (histories written after those checks existed). */
  checked?: true;
}

/** What an extractor returned for each session of the dev history: written once, then only replayed (README there). */
export const DEV_EXTRACTION = new URL('../test/fixtures/dev-recall/extraction.json', import.meta.url);

export const RECALL_FIXTURES: readonly RecallFixture[] = [
  { key: 'tuned', file: new URL('../test/fixtures/memory-recall.json', import.meta.url), label: 'tuned set (`test/fixtures/memory-recall.json`)' },
  { key: 'dev', file: new URL('../test/fixtures/dev-recall/recall.json', import.meta.url), label: 'dev set (`test/fixtures/dev-recall/recall.json`)' },
  {
    key: 'dev-long',
    file: new URL('../test/fixtures/dev-recall/recall-long.json', import.meta.url),
    label: 'long dev set (`test/fixtures/dev-recall/recall-long.json`)',
  },
  {
    key: 'dev-cross',
    file: new URL('../test/fixtures/dev-recall/recall-cross.json', import.meta.url),
    label: 'cross-language dev set (`test/fixtures/dev-recall/recall-cross.json`)',
  },
  {
    key: 'dev-zh',
    file: new URL('../test/fixtures/dev-recall/recall-zh.json', import.meta.url),
    label: 'Chinese dev set (`test/fixtures/dev-recall/recall-zh.json`)',
  },
  {
    key: 'dev-xl',
    file: new URL('../test/fixtures/dev-recall/recall-xl.json', import.meta.url),
    label: 'long dev set, short turns (`test/fixtures/dev-recall/recall-xl.json`)',
    checked: true,
  },
  {
    key: 'dev-mix',
    file: new URL('../test/fixtures/dev-recall/recall-mix.json', import.meta.url),
    label: 'mixed English and Chinese dev set (`test/fixtures/dev-recall/recall-mix.json`)',
    checked: true,
  },
  {
    key: 'dev-check',
    file: new URL('../test/fixtures/dev-recall/recall-check.json', import.meta.url),
    label: 'check set, long history with short turns (never tuned on) (`test/fixtures/dev-recall/recall-check.json`)',
    checked: true,
  },
  {
    key: 'heldout',
    file: new URL('../test/fixtures/heldout-memory/recall-long.json', import.meta.url),
    label: 'held-out set (`test/fixtures/heldout-memory/recall-long.json`, never tuned on)',
  },
];

const fixtureSchema = z.object({
  start: z.string(),
  sessions: z.array(
    z.object({ id: z.string(), day: z.number(), turns: z.array(z.object({ id: z.string(), role: z.enum(['user', 'assistant']), content: z.string() })) }),
  ),
  questions: z.array(
    z.object({ id: z.string(), day: z.number(), language: z.string(), question: z.string(), gold: z.array(z.string()).min(1), kind: z.string() }),
  ),
});
type Fixture = z.infer<typeof fixtureSchema>;
type Question = Fixture['questions'][number];

/** Turn ids in rank order (a unit may cite several turns; duplicates keep their first rank). */
type Ranker = (question: Question, now: Date) => Promise<string[]> | string[];

export interface RecallScore {
  method: string;
  /** mean share of a question's gold turns found in the top k, per k */
  recall: Record<number, number>;
  /**
   * share of questions with at least one gold turn in the top k, per k: the "any-evidence" recall
   * issue 13 quotes for the public benchmark (0.645 @10), looser than `recall` when a question has
   * several gold turns
   */
  anyEvidence: Record<number, number>;
  /** the same as `recall`, per language and per kind of question */
  byGroup: Record<string, Record<number, number>>;
}

export interface RecallReport {
  fixture: string;
  sessions: number;
  days: number;
  questions: number;
  turns: number;
  scores: RecallScore[];
}

function turnTime(start: number, day: number, index: number): number {
  return start + day * DAY_MS + 9 * 3_600_000 + index * 90_000;
}

/** One FTS5 table over the raw turns, holding either their text or our terms. */
function ftsBaseline(db: Db, fixture: Fixture, name: string, transform: (text: string) => string): Ranker {
  db.exec(`CREATE VIRTUAL TABLE ${name} USING fts5(turn_id UNINDEXED, body, tokenize = 'unicode61 remove_diacritics 2')`);
  const insert = db.prepare(`INSERT INTO ${name} (turn_id, body) VALUES (?, ?)`);
  db.transaction(() => {
    for (const session of fixture.sessions) for (const turn of session.turns) insert.run(turn.id, transform(turn.content));
  })();
  const query = db.prepare<[string, number], { turn_id: string }>(`SELECT turn_id FROM ${name} WHERE ${name} MATCH ? ORDER BY bm25(${name}) LIMIT ?`);
  return (question) => {
    // OR of the query's words: what a plain keyword search does with a natural-language question
    const words = [
      ...new Set(
        transform(question.question)
          .split(/\s+/)
          .filter((word) => /[\p{L}\p{N}]/u.test(word)),
      ),
    ];
    if (words.length === 0) return [];
    const expression = words.map((word) => `"${word.replace(/"/g, '""')}"`).join(' OR ');
    return query.all(expression, Math.max(...KS)).map((row) => row.turn_id);
  };
}

function score(method: string, fixture: Fixture, ranked: Map<string, string[]>): RecallScore {
  const recall: Record<number, number> = {};
  const groups = new Map<string, Question[]>();
  for (const question of fixture.questions) {
    for (const key of [`language ${question.language}`, `kind ${question.kind}`]) groups.set(key, [...(groups.get(key) ?? []), question]);
  }
  const recallAt = (questions: readonly Question[], k: number) =>
    questions.reduce((sum, question) => {
      const top = new Set(ranked.get(question.id)!.slice(0, k));
      return sum + question.gold.filter((id) => top.has(id)).length / question.gold.length;
    }, 0) / questions.length;
  for (const k of KS) recall[k] = recallAt(fixture.questions, k);
  const anyEvidence: Record<number, number> = {};
  for (const k of KS) {
    const found = fixture.questions.filter((question) =>
      ranked
        .get(question.id)!
        .slice(0, k)
        .some((id) => question.gold.includes(id)),
    );
    anyEvidence[k] = found.length / fixture.questions.length;
  }
  const byGroup: Record<string, Record<number, number>> = {};
  for (const [key, questions] of [...groups].sort(([a], [b]) => a.localeCompare(b)))
    byGroup[key] = Object.fromEntries(KS.map((k) => [k, recallAt(questions, k)]));
  return { method, recall, anyEvidence, byGroup };
}

export interface RecallOptions {
  /** Where the database goes (a temporary folder when undefined). */
  workDir?: string;
  /** Before measuring, run extraction over each session (an extractor that answers from this file). */
  extraction?: URL;
}

export async function measureMemoryRecall(source: RecallFixture, options: RecallOptions = {}): Promise<RecallReport> {
  const fixture = fixtureSchema.parse(JSON.parse(readFileSync(source.file, 'utf8')));
  const problems = source.checked ? recallFixtureProblems(fixture) : [];
  if (problems.length > 0) throw new Error(`${source.label} fails its checks:\n${problems.join('\n')}`);
  const home = options.workDir ?? mkdtempSync(join(tmpdir(), 'metaclaw-recall-'));
  const db = openDatabase(join(home, `recall-${source.key}${options.extraction ? '-extracted' : ''}.db`));
  try {
    const settings = memorySettings(loadConfig({ env: { METACLAW_HOME: home } }));
    const extractor = options.extraction ? await replayingExtractor(options.extraction) : undefined;
    // The proxy knows the user's languages from their recorded requests (UserLanguages); the bench ingests turns without records, so it tells them the same way.
    const written = requestLanguages(fixture.sessions.flatMap((session) => session.turns.filter((turn) => turn.role === 'user').map((turn) => turn.content)));
    const languages = { current: written, refresh: () => written };
    const memory = new MemoryService({
      db,
      logger: silentLogger(),
      settings: { ...settings, autoExtract: false, extractor: { apiBase: extractor?.url ?? '', apiKey: 'bench', model: 'bench-extractor' } },
      languages,
      ...(extractor
        ? {
            mainUpstream: { name: 'bench', baseUrl: extractor.url, format: 'openai', apiKey: 'bench', keySource: 'config', model: 'bench-extractor' },
            credentials: new CredentialMemory(),
          }
        : {}),
    });
    const start = Date.parse(fixture.start);
    let turns = 0;
    for (const session of fixture.sessions) {
      await memory.ingest(
        SCOPE,
        session.id,
        session.turns.map((turn, index) => ({ id: turn.id, role: turn.role, content: turn.content, timestamp: turnTime(start, session.day, index) })),
      );
      turns += session.turns.length;
    }
    if (extractor) {
      // The real extraction job (prompt, structured call, schema, storing), over an upstream that replays the file.
      const extract = memory.handlers().find((handler) => handler.kind === EXTRACT_JOB)!;
      for (const session of fixture.sessions) await extract.run({ sessionId: session.id, scope: SCOPE, final: false }, jobContext());
      extractor.close();
    }

    const ours: Ranker = async (question, now) => {
      const hits = await memory.retriever.recall({ scope: SCOPE, query: question.question, limit: Max, minRelevance: 0, now });
      return hits.flatMap((hit) => hit.unit.sourceTurns);
    };
    const Max = Math.max(...KS) * 2;
    const methods: Array<[string, Ranker]> = [
      [extractor ? 'MetaClaw-TS recall, with hand-written extractor units and search keys (ceiling)' : 'MetaClaw-TS recall', ours],
      ['FTS5 BM25 over raw turns', ftsBaseline(db, fixture, 'baseline_plain', (text) => text)],
      ['BM25 over raw turns, our segmentation', ftsBaseline(db, fixture, 'baseline_segmented', (text) => tokenize(text).join(' '))],
    ];
    const scores: RecallScore[] = [];
    for (const [name, rank] of methods) {
      const ranked = new Map<string, string[]>();
      for (const question of fixture.questions) {
        const now = new Date(start + question.day * DAY_MS + 12 * 3_600_000);
        ranked.set(question.id, [...new Set(await rank(question, now))]);
      }
      scores.push(score(name, fixture, ranked));
    }
    return {
      fixture: options.extraction
        ? `${source.label}, with hand-written extractor output replayed (units and search keys written by the author of its questions: a ceiling, see its README)`
        : source.label,
      sessions: fixture.sessions.length,
      days: Math.max(...fixture.sessions.map((session) => session.day)),
      questions: fixture.questions.length,
      turns,
      scores,
    };
  } finally {
    db.close();
    if (!options.workDir) rmSync(home, { recursive: true, force: true });
  }
}

/** A local OpenAI-style upstream that answers each extraction call with the file's output for that session. */
async function replayingExtractor(file: URL): Promise<{ url: string; close(): void }> {
  const answers = z.record(z.string(), z.unknown()).parse(JSON.parse(readFileSync(file, 'utf8')));
  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const session = /Conversation (\S+), scope/.exec(Buffer.concat(chunks).toString('utf8'))?.[1] ?? '';
      const content = JSON.stringify(answers[session] ?? { memories: [] });
      const body = JSON.stringify({
        id: 'chatcmpl-replay',
        object: 'chat.completion',
        created: 1,
        model: 'bench-extractor',
        choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }],
        usage: { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 },
      });
      response.writeHead(200, { 'content-type': 'application/json' }).end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as { port: number }).port}/v1`, close: () => server.close() };
}

function jobContext(): JobContext {
  return {
    job: { id: 0, kind: EXTRACT_JOB, payload: {}, attempts: 0, maxAttempts: 1, createdAt: Date.now() },
    signal: new AbortController().signal,
    logger: silentLogger(),
    spend: () => undefined,
  };
}

export function renderRecall(reports: readonly RecallReport[]): string[] {
  const percent = (value: number | undefined) => `${Math.round((value ?? 0) * 100)} %`;
  // The headline columns keep a decimal: an aim of 75 % is not met by 74.8 % rounded up.
  const precise = (value: number | undefined) => `${((value ?? 0) * 100).toFixed(1)} %`;
  const lines = [
    'Each history: questions asked on a later day, each with the turns that hold its answer. Recall@k: the share of those turns among the first k recalled (a memory unit counts for the turns it cites), averaged over the questions; "any evidence @10": the share of questions with at least one of their turns among the first ten (the measure issue 13 quotes for the public benchmark). No extractor and no embeddings unless a row says so: raw turns and the standing-instruction detector only. The baselines rank the same raw turns in the same run.',
  ];
  for (const report of reports) {
    const groups = Object.keys(report.scores[0]?.byGroup ?? {});
    lines.push(
      '',
      `**${report.fixture}**: ${report.questions} questions about a ${report.turns}-turn history (${report.sessions} sessions over ${report.days} days).`,
      '',
      `| method | recall@5 | recall@10 | any evidence @10 | ${groups.map((group) => `${group} @10`).join(' | ')} |`,
      `|---|---|---|---|${groups.map(() => '---').join('|')}|`,
      ...report.scores.map(
        (entry) =>
          `| ${entry.method} | ${precise(entry.recall[5])} | ${precise(entry.recall[10])} | ${precise(entry.anyEvidence[10])} | ${groups.map((group) => percent(entry.byGroup[group]?.[10])).join(' | ')} |`,
      ),
    );
  }
  return lines;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const keys = process.argv.slice(2);
  const chosen = RECALL_FIXTURES.filter((fixture) => (keys.length > 0 ? keys.includes(fixture.key) : fixture.key !== 'heldout'));
  const reports: RecallReport[] = [];
  for (const fixture of chosen) {
    reports.push(await measureMemoryRecall(fixture));
    if (fixture.key === 'dev') reports.push(await measureMemoryRecall(fixture, { extraction: DEV_EXTRACTION }));
  }
  process.stdout.write(`${renderRecall(reports).join('\n')}\n`);
}
