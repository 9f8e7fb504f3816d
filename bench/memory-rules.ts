/**
 * Standing rules learned from corrections, on a labelled multi-week history: each user turn is
 * replayed through the real memory pipeline in order (the context the proxy would inject for it,
 * then the turn recorded as the record-turn job stores it: raw turns and the deterministic rule
 * detector, no extractor LLM), and every turn that needs a rule is checked for it in what was
 * injected. A rule counts as shown when a shown unit (core block or recalled) cites the turn that
 * taught it or one that restated it.
 *
 * Standalone: `node --import tsx bench/memory-rules.ts` (the dev scenario); `--heldout` adds the
 * held-out scenario, which is for measuring, never for tuning.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { z } from 'zod';
import { loadConfig } from '../src/config/index.js';
import type { ContextSection } from '../src/context/index.js';
import type { JobContext } from '../src/learning/index.js';
import { silentLogger } from '../src/logging/index.js';
import { EXTRACT_JOB, MemoryService, type MemorySettings } from '../src/memory/index.js';
import { CORE_HEADING, MEMORY_HEADING } from '../src/memory/render.js';
import { memorySettings } from '../src/runtime/settings.js';
import { openDatabase } from '../src/store/index.js';
import { countTextTokens } from '../src/text/index.js';
import { CredentialMemory } from '../src/upstream/index.js';

export const DEV_RULES = new URL('../test/fixtures/dev-rules/rules-dev.json', import.meta.url);
export const DEV_ANALYST_RULES = new URL('../test/fixtures/dev-rules/rules-dev-analyst.json', import.meta.url);
export const HELDOUT_RULES = new URL('../test/fixtures/heldout-memory/rules-30-days.json', import.meta.url);
const DAY_MS = 86_400_000;
const SCOPE = 'rules-bench';

const turnSchema = z.object({
  id: z.string(),
  role: z.enum(['user', 'assistant']),
  content: z.string(),
  teaches_rule: z.string().optional(),
  needs_rules: z.array(z.string()).optional(),
  one_off: z.boolean().optional(),
  restates_rule: z.string().optional(),
  suspends_rules: z.array(z.string()).optional(),
});
const fixtureSchema = z.object({
  start: z.string(),
  rules: z.array(
    z.object({ id: z.string(), taught_in_turn: z.string(), language: z.string(), general_form: z.string(), superseded_by: z.string().optional() }),
  ),
  sessions: z.array(z.object({ id: z.string(), day: z.number(), turns: z.array(turnSchema) })),
});
type Fixture = z.infer<typeof fixtureSchema>;
type Turn = z.infer<typeof turnSchema>;

export interface RulesReport {
  scenario: string;
  variant: string;
  rules: number;
  /** (turn, rule) pairs where a later turn needs a rule */
  needs: number;
  /** share of those where the rule was shown (anywhere in the memory section, and in the core block) */
  recall: number;
  coreRecall: number;
  byRule: Record<string, { needs: number; shown: number; leaks: number }>;
  /**
   * Per replaced rule: the core units that still cite the turn that taught it at the end, and the
   * other rules those units cite ("the replacement was not linked" when none, "merged into R…" else).
   */
  stillInForce: Record<string, { units: number; with: string[] }>;
  /** Per replaced rule, the rules of the units that superseded its units (the one that replaces it, when linked right). */
  replacedBy: Record<string, string[]>;
  /** Rules never replaced that no core unit cites at the end: superseded by a unit citing other rules, or never taken as a rule. */
  lost: Record<string, { supersededBy: string[] } | 'never a rule'>;
  /** rules shown before they were taught, or after the rule that replaced them was taught */
  leaks: number;
  /** what `memory core` holds at the end: units, tokens, and how many are not a taught rule */
  core: { units: number; tokens: number; notRules: number; oneOffs: number; copies: number; examples: string[] };
  /** tokens of the injected core block per turn */
  coreBlock: { mean: number; max: number };
}

interface Variant {
  name: string;
  /** the scripted "perfect extractor": marks exactly the teaching turns as standing instructions */
  perfectExtractor?: boolean;
  coreMaxTokens?: number;
}

export const RULE_VARIANTS: readonly Variant[] = [
  { name: 'detector only (no extractor)' },
  { name: 'detector only, core budget 150 tokens', coreMaxTokens: 150 },
  { name: 'detector + perfect extractor', perfectExtractor: true },
];

export async function measureRules(fixtureUrl: URL, variant: Variant, workDir?: string): Promise<RulesReport> {
  const fixture = fixtureSchema.parse(JSON.parse(readFileSync(fixtureUrl, 'utf8')));
  const home = workDir ?? mkdtempSync(join(tmpdir(), 'metaclaw-rules-'));
  const db = openDatabase(join(home, `rules-${Date.now()}.db`));
  const extractor = variant.perfectExtractor ? await perfectExtractor(fixture) : undefined;
  try {
    const base = memorySettings(loadConfig({ env: { METACLAW_HOME: home } }));
    const settings: MemorySettings = {
      ...base,
      autoExtract: false,
      coreMaxTokens: variant.coreMaxTokens ?? base.coreMaxTokens,
      ...(extractor ? { extractor: { apiBase: extractor.url, apiKey: 'k', model: 'perfect' } } : {}),
    };
    const memory = new MemoryService({
      db,
      logger: silentLogger(),
      settings,
      ...(extractor
        ? {
            mainUpstream: { name: 'scripted', baseUrl: extractor.url, format: 'openai', apiKey: 'k', keySource: 'config', model: 'perfect' },
            credentials: new CredentialMemory(),
          }
        : {}),
    });
    const extract = memory.handlers().find((handler) => handler.kind === EXTRACT_JOB)!;
    return await replay(fixture, memory, async (sessionId) => {
      if (extractor) await extract.run({ sessionId, scope: SCOPE, final: true }, jobContext());
    }).then((result) => ({ ...result, scenario: '', variant: variant.name }));
  } finally {
    await extractor?.close();
    db.close();
    if (!workDir) rmSync(home, { recursive: true, force: true });
  }
}

async function replay(
  fixture: Fixture,
  memory: MemoryService,
  endSession: (sessionId: string) => Promise<void>,
): Promise<Omit<RulesReport, 'scenario' | 'variant'>> {
  const order = new Map<string, number>();
  fixture.sessions.forEach((session) => session.turns.forEach((turn) => order.set(turn.id, order.size)));
  // The turns that state each rule: shown units citing one of them show the rule.
  const ruleOf = new Map<string, string>();
  for (const rule of fixture.rules) ruleOf.set(rule.taught_in_turn, rule.id);
  for (const session of fixture.sessions) for (const turn of session.turns) if (turn.restates_rule) ruleOf.set(turn.id, turn.restates_rule);
  const taughtAt = new Map(fixture.rules.map((rule) => [rule.id, order.get(rule.taught_in_turn)!]));
  const retiredAt = new Map(
    fixture.rules.filter((rule) => rule.superseded_by).map((rule) => [rule.id, taughtAt.get(rule.superseded_by!) ?? Number.POSITIVE_INFINITY]),
  );

  // Fixture days are mapped so that the last one ended yesterday: recency works as it would live.
  const lastDay = Math.max(...fixture.sessions.map((session) => session.day));
  const shift = Date.now() - DAY_MS - (Date.parse(fixture.start) + lastDay * DAY_MS + 12 * 3_600_000);
  const sessionsPerDay = new Map<number, number>();

  const byRule: RulesReport['byRule'] = Object.fromEntries(fixture.rules.map((rule) => [rule.id, { needs: 0, shown: 0, leaks: 0 }]));
  let needs = 0;
  let shown = 0;
  let inCore = 0;
  let leaks = 0;
  const blockTokens: number[] = [];
  for (const session of fixture.sessions) {
    const nth = sessionsPerDay.get(session.day) ?? 0;
    sessionsPerDay.set(session.day, nth + 1);
    const sessionStart = Date.parse(fixture.start) + shift + session.day * DAY_MS + nth * 4 * 3_600_000;
    for (let index = 0; index < session.turns.length; index++) {
      const turn = session.turns[index]!;
      if (turn.role !== 'user') continue;
      const reply = session.turns[index + 1]?.role === 'assistant' ? session.turns[index + 1] : undefined;
      const section = await memory.provider.provide({
        format: 'openai',
        body: {},
        userRequest: { text: turn.content, messageIndex: 0, isReset: false, earlier: '' },
        turnType: 'main',
        scope: SCOPE,
        sessionId: session.id,
      });
      const { all, core } = shownRules(section, memory, ruleOf);
      blockTokens.push(coreBlockTokens(section));
      const at = order.get(turn.id)!;
      for (const rule of all)
        if (at <= taughtAt.get(rule)! || at > (retiredAt.get(rule) ?? Number.POSITIVE_INFINITY)) {
          leaks++;
          byRule[rule]!.leaks++;
        }
      for (const rule of turn.needs_rules ?? []) {
        needs++;
        byRule[rule]!.needs++;
        if (all.has(rule)) {
          shown++;
          byRule[rule]!.shown++;
        }
        if (core.has(rule)) inCore++;
      }
      // what the record-turn job does once the turn is recorded (it runs as soon as the proxy is idle)
      memory.storeTurns(SCOPE, session.id, [
        { id: turn.id, role: 'user', content: turn.content, timestamp: sessionStart + index * 90_000 },
        ...(reply ? [{ id: reply.id, role: 'assistant' as const, content: reply.content, timestamp: sessionStart + (index + 1) * 90_000 }] : []),
      ]);
    }
    await endSession(session.id);
  }
  return {
    rules: fixture.rules.length,
    needs,
    recall: needs === 0 ? 0 : shown / needs,
    coreRecall: needs === 0 ? 0 : inCore / needs,
    byRule,
    leaks,
    core: coreContents(memory, fixture, ruleOf),
    stillInForce: stillInForce(memory, fixture, ruleOf),
    lost: lostRules(memory, fixture, ruleOf),
    replacedBy: replacedBy(memory, fixture, ruleOf),
    coreBlock: { mean: Math.round(blockTokens.reduce((sum, value) => sum + value, 0) / Math.max(1, blockTokens.length)), max: Math.max(0, ...blockTokens) },
  };
}

/** The rules a memory section shows: through any unit, and through the core block. */
function shownRules(section: ContextSection | undefined, memory: MemoryService, ruleOf: Map<string, string>): { all: Set<string>; core: Set<string> } {
  const details = section?.details as { core?: Array<{ id: string }>; recalled?: Array<{ id: string }> } | undefined;
  const rulesOf = (ids: Array<{ id: string }>) =>
    new Set(ids.flatMap(({ id }) => (memory.store.get(id)?.sourceTurns ?? []).map((turn) => ruleOf.get(turn)).filter((rule) => rule !== undefined)));
  const core = rulesOf(details?.core ?? []);
  return { all: new Set([...core, ...rulesOf(details?.recalled ?? [])]), core };
}

function coreBlockTokens(section: ContextSection | undefined): number {
  if (!section?.text.startsWith(CORE_HEADING)) return 0;
  return countTextTokens(section.text.split(MEMORY_HEADING)[0]!);
}

function coreContents(memory: MemoryService, fixture: Fixture, ruleOf: Map<string, string>): RulesReport['core'] {
  const oneOffTurns = new Set(fixture.sessions.flatMap((session) => session.turns.filter((turn) => turn.one_off).map((turn) => turn.id)));
  const units = memory.store.coreUnits(SCOPE);
  const seen = new Set<string>();
  let notRules = 0;
  let oneOffs = 0;
  let copies = 0;
  const examples: string[] = [];
  for (const unit of units) {
    const rules = new Set(unit.sourceTurns.map((turn) => ruleOf.get(turn)).filter((rule) => rule !== undefined));
    if (unit.sourceTurns.some((turn) => oneOffTurns.has(turn))) oneOffs++;
    if (rules.size === 0) {
      notRules++;
      if (examples.length < 5) examples.push(unit.content.slice(0, 100));
    }
    for (const rule of rules) {
      if (seen.has(rule)) copies++;
      seen.add(rule);
    }
  }
  return { units: units.length, tokens: units.reduce((sum, unit) => sum + countTextTokens(unit.content), 0), notRules, oneOffs, copies, examples };
}

/** The replaced rules some core unit still cites at the end (what a leak after the replacement comes from). */
function stillInForce(memory: MemoryService, fixture: Fixture, ruleOf: Map<string, string>): RulesReport['stillInForce'] {
  const units = memory.store.coreUnits(SCOPE).map((unit) => new Set(unit.sourceTurns.map((turn) => ruleOf.get(turn)).filter((rule) => rule !== undefined)));
  const result: RulesReport['stillInForce'] = {};
  for (const rule of fixture.rules.filter((candidate) => candidate.superseded_by)) {
    const citing = units.filter((rules) => rules.has(rule.id));
    if (citing.length > 0)
      result[rule.id] = { units: citing.length, with: [...new Set(citing.flatMap((rules) => [...rules].filter((other) => other !== rule.id)))] };
  }
  return result;
}

/** For each rule the fixture replaces, the rules cited by the units that superseded its units. */
function replacedBy(memory: MemoryService, fixture: Fixture, ruleOf: Map<string, string>): RulesReport['replacedBy'] {
  const rulesOf = (turns: readonly string[]) => [...new Set(turns.map((turn) => ruleOf.get(turn)).filter((rule) => rule !== undefined))];
  const superseded = memory.store.list(SCOPE, 100_000).filter((unit) => unit.core && unit.status === 'superseded');
  const result: RulesReport['replacedBy'] = {};
  for (const rule of fixture.rules.filter((candidate) => candidate.superseded_by)) {
    const by = superseded
      .filter((unit) => rulesOf(unit.sourceTurns).includes(rule.id))
      .flatMap((unit) => rulesOf(memory.store.get(unit.supersededBy ?? '')?.sourceTurns ?? []));
    result[rule.id] = [...new Set(by)];
  }
  return result;
}

/** The rules the fixture never replaces that no core unit cites at the end, and what became of them. */
function lostRules(memory: MemoryService, fixture: Fixture, ruleOf: Map<string, string>): RulesReport['lost'] {
  const rulesOf = (turns: readonly string[]) => new Set(turns.map((turn) => ruleOf.get(turn)).filter((rule) => rule !== undefined));
  const active = new Set(memory.store.coreUnits(SCOPE).flatMap((unit) => [...rulesOf(unit.sourceTurns)]));
  const units = memory.store.list(SCOPE, 100_000).filter((unit) => unit.core);
  const lost: RulesReport['lost'] = {};
  for (const rule of fixture.rules) {
    if (rule.superseded_by || active.has(rule.id)) continue;
    const replacedBy = units
      .filter((unit) => unit.status === 'superseded' && rulesOf(unit.sourceTurns).has(rule.id))
      .flatMap((unit) => [...rulesOf(memory.store.get(unit.supersededBy ?? '')?.sourceTurns ?? [])]);
    lost[rule.id] = units.some((unit) => rulesOf(unit.sourceTurns).has(rule.id)) ? { supersededBy: [...new Set(replacedBy)] } : 'never a rule';
  }
  return lost;
}

function jobContext(): JobContext {
  return { job: {} as JobContext['job'], signal: new AbortController().signal, logger: silentLogger(), spend: () => undefined };
}

/**
 * The "perfect extractor": an OpenAI-compatible endpoint that, shown a session's new turns, marks
 * exactly the teaching turns as standing instructions (their general form, word for word).
 */
async function perfectExtractor(fixture: Fixture): Promise<{ url: string; close(): Promise<void> }> {
  const taught = new Map<string, string>();
  for (const rule of fixture.rules) {
    const turn = fixture.sessions.flatMap((session) => session.turns).find((candidate: Turn) => candidate.id === rule.taught_in_turn);
    if (turn) taught.set(turn.content.slice(0, 2_000), rule.general_form);
  }
  const server = http.createServer((request, response) => {
    let body = '';
    request.on('data', (chunk: Buffer) => (body += chunk.toString()));
    request.on('end', () => {
      const prompt = ((JSON.parse(body) as { messages: Array<{ content: string }> }).messages.at(-1)?.content ?? '').split('\n');
      const memories: unknown[] = [];
      for (const line of prompt) {
        const match = /^\[turn (\d+), [^\]]+\] user: (.*)$/.exec(line);
        const form = match ? taught.get(match[2]!) : undefined;
        if (match && form)
          memories.push({ action: 'add', type: 'preference', content: form, standing_instruction: true, importance: 0.9, turn: Number(match[1]) });
      }
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end(
        JSON.stringify({
          id: 'perfect',
          object: 'chat.completion',
          created: 1,
          model: 'perfect',
          choices: [{ index: 0, message: { role: 'assistant', content: JSON.stringify({ memories, session_summary: null }) }, finish_reason: 'stop' }],
          usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
        }),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

export async function measureRuleScenarios(scenarios: ReadonlyArray<[string, URL]>, workDir?: string): Promise<RulesReport[]> {
  const reports: RulesReport[] = [];
  for (const [scenario, url] of scenarios) for (const variant of RULE_VARIANTS) reports.push({ ...(await measureRules(url, variant, workDir)), scenario });
  return reports;
}

export function renderRules(reports: readonly RulesReport[]): string[] {
  const percent = (value: number) => `${Math.round(value * 100)} %`;
  return [
    'Each scenario is replayed turn by turn through the memory pipeline (the context injected for each user turn, then the turn recorded as the record-turn job stores it; with the extractor, each session is extracted when it ends). "rule recall": share of (turn, rule) needs where the rule was in the injected memory section (core block or recalled; in the core block alone in brackets). "leaks": rules shown before they were taught, or after the rule that replaced them was. "core": what `metaclaw memory core` holds at the end (units, tokens), "not rules": units that came from no teaching turn (one-off requests among them), "copies": second units for one rule. The dev scenario (`test/fixtures/dev-rules/`) is for tuning; the held-out one (`test/fixtures/heldout-memory/rules-30-days.json`) is only measured.',
    '',
    '| scenario | variant | needs | rule recall (core) | leaks | core units / tokens | not rules (one-offs) | copies | core block tokens mean / max |',
    '|---|---|---|---|---|---|---|---|---|',
    ...reports.map(
      (report) =>
        `| ${report.scenario} | ${report.variant} | ${report.needs} | **${percent(report.recall)}** (${percent(report.coreRecall)}) | ${report.leaks} | ${report.core.units} / ${report.core.tokens} | ${report.core.notRules} (${report.core.oneOffs}) | ${report.core.copies} | ${report.coreBlock.mean} / ${report.coreBlock.max} |`,
    ),
    '',
    'Rule recall per rule (shown / needed, and leaks where any):',
    '',
    ...reports
      .filter((report) => report.variant === RULE_VARIANTS[0]!.name)
      .map(
        (report) =>
          `- ${report.scenario}: ${Object.entries(report.byRule)
            .filter(([, counts]) => counts.needs > 0 || counts.leaks > 0)
            .map(([rule, counts]) => `${rule} ${counts.shown}/${counts.needs}${counts.leaks > 0 ? ` (${counts.leaks} leaks)` : ''}`)
            .join(', ')}${Object.entries(report.stillInForce)
            .map(
              ([rule, { units, with: others }]) => `; replaced ${rule} still in ${units} core unit(s)${others.length > 0 ? ` with ${others.join(', ')}` : ''}`,
            )
            .join('')}${Object.entries(report.replacedBy)
            .map(([rule, by]) => `; ${rule} replaced by ${by.length > 0 ? by.join(', ') : 'nothing'}`)
            .join('')}${Object.entries(report.lost)
            .map(
              ([rule, what]) =>
                `; ${rule} lost: ${what === 'never a rule' ? what : `superseded by a unit of ${what.supersededBy.join(', ') || 'no taught rule'}`}`,
            )
            .join('')}`,
      ),
  ];
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const scenarios: Array<[string, URL]> = [
    ['dev: app developer', DEV_RULES],
    ['dev: analyst', DEV_ANALYST_RULES],
  ];
  if (process.argv.includes('--heldout')) scenarios.push(['held-out', HELDOUT_RULES]);
  const reports = await measureRuleScenarios(scenarios);
  process.stdout.write(`${renderRules(reports).join('\n')}\n`);
  if (process.argv.includes('--verbose'))
    for (const report of reports) process.stdout.write(`${report.scenario} / ${report.variant}: ${JSON.stringify(report.core.examples)}\n`);
}
