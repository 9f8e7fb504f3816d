import { extractJson } from '../../learning/index.js';
import type { JudgeScore } from '../types.js';

const SCORES = new Set([-1, 0, 1]);

/**
 * The score in a judge's answer, or undefined when it holds none in {-1, 0, 1}. Read in this order:
 * the last "Score: N" (MetaClaw's form, also `**Score:** N`, `score = N`), the last `\boxed{N}`, a
 * JSON `{"score": N}`, and the last number in the text. A form that is present but out of range
 * (Score: 7) is a bad answer, not a reason to look further.
 */
export function parseScore(text: string): JudgeScore | undefined {
  const labelled = lastMatch(text, /\bscore\**\s*[:=：]?\s*\**\s*\(?\s*([+-]?\d+(?:\.\d+)?)/gi);
  if (labelled !== undefined) return asScore(labelled);
  const boxed = lastMatch(text, /\\boxed\{\s*([+-]?\d+(?:\.\d+)?)\s*\}/g);
  if (boxed !== undefined) return asScore(boxed);
  const json = extractJson(text);
  if (typeof json === 'number') return asScore(String(json));
  if (json && typeof json === 'object' && !Array.isArray(json) && 'score' in json) return asScore(String(json.score));
  const last = lastMatch(text, /(?<![\w.])([+-]?\d+(?:\.\d+)?)(?![\w.])/g);
  return last === undefined ? undefined : asScore(last);
}

/** The value more than half of all `votes` agree on (a failed vote is null and agrees with nothing); else null. */
export function majorityOf(votes: ReadonlyArray<JudgeScore | null>): JudgeScore | null {
  const counts = new Map<JudgeScore, number>();
  for (const vote of votes) if (vote !== null) counts.set(vote, (counts.get(vote) ?? 0) + 1);
  for (const [score, count] of counts) if (count * 2 > votes.length) return score;
  return null;
}

function lastMatch(text: string, pattern: RegExp): string | undefined {
  let last: string | undefined;
  for (const match of text.matchAll(pattern)) last = match[1];
  return last;
}

function asScore(text: string): JudgeScore | undefined {
  const value = Number(text);
  return SCORES.has(value) ? (value as JudgeScore) : undefined;
}
