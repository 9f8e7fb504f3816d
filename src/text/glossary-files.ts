import { readFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import type { GlossaryLanguage } from './glossary.js';

/**
 * The bundled glossary files per language, in the order they are read: a later file's line replaces
 * an earlier one's for the same headword (the proper nouns, `zh-en-names.tsv.gz`, are built apart
 * from the main file). The order is also the English → Chinese look-up's order of preference: the
 * few names that are their English word's usual translation (`zh-en-names-first.tsv.gz`: "china"
 * 中国, "french" 法语) are read before the main file's words.
 */
export const GLOSSARY_FILES = {
  zh: [
    new URL('../../data/glossary/zh-en-names-first.tsv.gz', import.meta.url),
    new URL('../../data/glossary/zh-en.tsv.gz', import.meta.url),
    new URL('../../data/glossary/zh-en-names.tsv.gz', import.meta.url),
  ],
  ja: [new URL('../../data/glossary/ja-en.tsv.gz', import.meta.url)],
} as const satisfies Record<GlossaryLanguage, readonly URL[]>;

const tables = new Map<GlossaryLanguage, ReadonlyMap<string, string>>();

/**
 * A language's shipped glossary, headword → its English gloss words as written, read once. The
 * glossary (glossary.ts) and Chinese word segmentation (chinese-words.ts) share this one copy: the
 * Chinese files hold some 60,000 headwords.
 */
export function shippedGlossaryTable(language: GlossaryLanguage): ReadonlyMap<string, string> {
  let table = tables.get(language);
  if (!table) {
    const entries = new Map<string, string>();
    for (const file of GLOSSARY_FILES[language]) readGlossaryText(gunzipSync(readFileSync(file)).toString('utf8'), entries);
    tables.set(language, (table = entries));
  }
  return table;
}

/** Adds the lines of a glossary file (`headword<TAB>gloss words`; `#` comments) to `entries`, a later line replacing an earlier one. */
function readGlossaryText(text: string, entries: Map<string, string>): void {
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const tab = line.indexOf('\t');
    if (tab > 0) entries.set(line.slice(0, tab), line.slice(tab + 1));
  }
}
