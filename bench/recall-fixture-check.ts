/**
 * Sanity checks for a labelled recall history, so a hand-written set cannot silently measure the wrong thing:
 * ids unique, session days in order, every gold turn exists and is said before its question is asked,
 * and every multi-hop question really has evidence in two or more sessions.
 *
 * Standalone: `node --import tsx bench/recall-fixture-check.ts [file.json …]` (default: the check set).
 */
import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';

/** The parts of a history the checks read (the bench's zod schema validates the full shape). */
export interface CheckableFixture {
  sessions: ReadonlyArray<{ id: string; day: number; turns: ReadonlyArray<{ id: string }> }>;
  questions: ReadonlyArray<{ id: string; day: number; gold: readonly string[]; kind: string }>;
}

/** Every problem found, as a sentence each; empty when the history is sound. */
export function recallFixtureProblems(fixture: CheckableFixture): string[] {
  const problems: string[] = [];
  const seen = new Set<string>();
  const claim = (id: string) => {
    if (seen.has(id)) problems.push(`id ${id} is used twice`);
    seen.add(id);
  };
  const sessionOfTurn = new Map<string, { id: string; day: number }>();
  let previousDay = -Infinity;
  for (const session of fixture.sessions) {
    claim(session.id);
    if (session.day <= previousDay) problems.push(`session ${session.id} (day ${session.day}) does not come after day ${previousDay}`);
    previousDay = session.day;
    for (const turn of session.turns) {
      claim(turn.id);
      sessionOfTurn.set(turn.id, session);
    }
  }
  for (const question of fixture.questions) {
    claim(question.id);
    const sessions = new Set<string>();
    for (const gold of question.gold) {
      const session = sessionOfTurn.get(gold);
      if (!session) {
        problems.push(`question ${question.id}: gold turn ${gold} does not exist`);
        continue;
      }
      sessions.add(session.id);
      if (session.day >= question.day) problems.push(`question ${question.id} (day ${question.day}) is asked before its evidence ${gold} (day ${session.day})`);
    }
    if (question.kind === 'multi-hop' && sessions.size < 2) problems.push(`multi-hop question ${question.id} has evidence in only ${sessions.size} session`);
  }
  return problems;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const files = process.argv.length > 2 ? process.argv.slice(2) : [new URL('../test/fixtures/dev-recall/recall-check.json', import.meta.url)];
  let failed = false;
  for (const file of files) {
    const problems = recallFixtureProblems(JSON.parse(readFileSync(file, 'utf8')) as CheckableFixture);
    for (const problem of problems) process.stderr.write(`${String(file)}: ${problem}\n`);
    process.stdout.write(`${String(file)}: ${problems.length === 0 ? 'ok' : `${problems.length} problem(s)`}\n`);
    failed ||= problems.length > 0;
  }
  process.exitCode = failed ? 1 : 0;
}
