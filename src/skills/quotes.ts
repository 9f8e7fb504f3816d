import { existsSync, readFileSync } from 'node:fs';
import { writeFileAtomic } from '../shared/atomic-write.js';
import { forgetNeedles, scrubJsonText } from '../shared/forget-text.js';
import type { Db } from '../store/index.js';
import { evolutionLogFile } from './history.js';
import { ProposalStore } from './proposals.js';

/**
 * The skill records of a personal install that quote session text word for word: the evolution
 * log (evolution_history.jsonl: each change's evidence) and the review proposals (skill_proposals).
 * When a memory is forgotten, its texts are scrubbed from them too (MemoryService's `quotes`).
 */
export class SkillQuotes {
  private readonly proposals: ProposalStore;

  constructor(
    private readonly db: Db,
    private readonly skillsDir: string,
  ) {
    this.proposals = new ProposalStore(db);
  }

  /**
   * Returns the proposals and log lines rewritten. The log is rewritten holding the database's
   * write lock, as the proxy holds it to append (SkillHistory.appendEvolution): an evolution
   * appended between the read and the rename would be lost.
   */
  scrubTexts(texts: readonly string[]): number {
    const needles = forgetNeedles(texts);
    if (needles.length === 0) return 0;
    return this.db.transaction(() => this.proposals.scrub(needles) + scrubEvolutionLog(evolutionLogFile(this.skillsDir), needles)).immediate();
  }
}

/**
 * Rewrites the log with the needles scrubbed inside each line's JSON strings (every line stays
 * JSON), atomically (temp file and rename, 0600); a log that holds none is left untouched.
 */
function scrubEvolutionLog(file: string, needles: readonly string[]): number {
  if (!existsSync(file)) return 0;
  let changed = 0;
  const lines = readFileSync(file, 'utf8')
    .split('\n')
    .map((line) => {
      const scrubbed = scrubJsonText(needles, line);
      if (scrubbed !== line) changed++;
      return scrubbed;
    });
  if (changed > 0) writeFileAtomic(file, lines.join('\n'), { mode: 0o600 });
  return changed;
}
