import { cpSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { STARTER_DIR } from '../../src/skills/index.js';

/**
 * The starter bank with only the English entries of each `Keywords:` line: an English skill bank
 * (the starter skills carry Chinese and Japanese keywords, which would answer a cross-lingual
 * request by themselves). Written to `target`, which is returned.
 */
export function englishOnlyStarter(target: string): string {
  cpSync(STARTER_DIR, target, { recursive: true });
  for (const name of readdirSync(target)) {
    const file = join(target, name, 'SKILL.md');
    const text = readFileSync(file, 'utf8').replace(/^Keywords: (.*)$/m, (_line, list: string) => {
      const english = list.split(',').filter((keyword) => !/[\u3040-\u30ff\u3400-\u9fff]/.test(keyword));
      return `Keywords: ${english.join(',').trim()}`;
    });
    writeFileSync(file, text);
  }
  return target;
}
