import { z } from 'zod';
import { forgetNeedles, jsonForms, scrubJsonText } from '../../shared/forget-text.js';
import { scrubbedQuotes } from '../../skills/proposals.js';
import type { Queryable } from './job-queue.js';
import { fromPostgresText, toPostgresText } from './text.js';

const evolutionRow = z.object({ id: z.string(), record: z.string() });
const proposalRow = z.object({ id: z.coerce.number(), evidence: z.string(), reason: z.string().nullable() });

/**
 * Scrubs forgotten texts (as stored in memory_units) from the team's skill records that quote
 * session text word for word — the evolution log (skill_evolutions: each line stays JSON) and the
 * review proposals' evidence and reason — on `db`, the forget's transaction: what SkillQuotes does
 * to a personal install's evolution_history.jsonl and skill_proposals. Returns the rows rewritten.
 */
export async function scrubPgSkillQuotes(db: Queryable, texts: readonly string[]): Promise<number> {
  const needles = forgetNeedles(texts.map(fromPostgresText));
  if (needles.length === 0) return 0;
  // Rows that may hold one (as it is, or escaped in JSON); the scrub decides. Only the first form may hold U+0000.
  const patterns = [...new Set(needles.flatMap((needle) => jsonForms(needle).map(toPostgresText)))];
  const holds = (column: string) => `EXISTS (SELECT 1 FROM unnest($1::text[]) n WHERE strpos(${column}, n) > 0)`;
  let rewritten = 0;
  const evolutions = await db.query(`SELECT id::text AS id, record FROM skill_evolutions WHERE ${holds('record')} ORDER BY id FOR UPDATE`, [patterns]);
  for (const row of z.array(evolutionRow).parse(evolutions.rows)) {
    const record = scrubJsonText(needles, row.record);
    if (record === row.record) continue;
    await db.query('UPDATE skill_evolutions SET record = $1 WHERE id = $2', [record, row.id]);
    rewritten++;
  }
  const proposals = await db.query(
    `SELECT id, evidence, reason FROM skill_proposals WHERE ${holds('evidence')} OR ${holds("coalesce(reason, '')")} ORDER BY id FOR UPDATE`,
    [patterns],
  );
  for (const row of z.array(proposalRow).parse(proposals.rows)) {
    const scrubbed = scrubbedQuotes(needles, row);
    if (!scrubbed) continue;
    await db.query('UPDATE skill_proposals SET evidence = $1, reason = $2 WHERE id = $3', [scrubbed.evidence, scrubbed.reason, row.id]);
    rewritten++;
  }
  return rewritten;
}
