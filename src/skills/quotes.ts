import { existsSync, readFileSync, statSync } from 'node:fs';
import { writeFileAtomic } from '../shared/atomic-write.js';
import { forgetNeedles, scrubJsonText } from '../shared/forget-text.js';
import type { Db } from '../store/index.js';
import { evolutionLogFile } from './history.js';
import { ProposalStore } from './proposals.js';

/** Rewrites lost to an append in between are read again this many times. */
const ATTEMPTS = 5;

/**
 * The skill records of a personal install that quote session text word for word: the evolution
 * log (evolution_history.jsonl: each change's evidence) and the review proposals (skill_proposals).
 * When a memory is forgotten, its texts are scrubbed from them too (MemoryService's `quotes`).
 */
export class SkillQuotes {
  private readonly proposals: ProposalStore;

  constructor(
    db: Db,
    private readonly skillsDir: string,
  ) {
    this.proposals = new ProposalStore(db);
  }

  /** Returns the proposals and log lines rewritten. */
  scrubTexts(texts: readonly string[]): number {
    const needles = forgetNeedles(texts);
    if (needles.length === 0) return 0;
    return this.proposals.scrub(needles) + scrubEvolutionLog(evolutionLogFile(this.skillsDir), needles);
  }
}

/**
 * Rewrites the log with the needles scrubbed inside each line's JSON strings (every line stays
 * JSON), atomically (temp file and rename, 0600); a log that holds none is left untouched. The
 * proxy appends to it while the CLI forgets: an evolution appended between the read and the
 * rename would be lost, so a log that grew meanwhile is read again.
 */
function scrubEvolutionLog(file: string, needles: readonly string[]): number {
  for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
    if (!existsSync(file)) return 0;
    const before = readFileSync(file);
    const text = before.toString('utf8');
    let changed = 0;
    const lines = text.split('\n').map((line) => {
      const scrubbed = scrubJsonText(needles, line);
      if (scrubbed !== line) changed++;
      return scrubbed;
    });
    if (changed === 0) return 0;
    if (statSync(file).size !== before.length) continue;
    writeFileAtomic(file, lines.join('\n'), { mode: 0o600 });
    return changed;
  }
  throw new Error(`${file} kept growing while forgotten texts were scrubbed from it; forget again`);
}
