import { readFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import type { GlossaryLanguage } from './glossary.js';
import { isCommentLine, LineTable } from './line-table.js';

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

const tables = new Map<GlossaryLanguage, LineTable>();

/**
 * A language's shipped glossary, headword → its English gloss words as written, read once. The
 * glossary (glossary.ts) and Chinese word segmentation (chinese-words.ts) share this one copy: the
 * Chinese files hold some 60,000 headwords. Kept as the files' text with an index (line-table.ts):
 * as a Map the two languages took 13 MiB of the proxy's heap, now some 5 MiB.
 */
export function shippedGlossaryTable(language: GlossaryLanguage): LineTable {
  let table = tables.get(language);
  if (!table) {
    // `headword<TAB>gloss words` lines, `#` comments; a later file's line replaces an earlier one's.
    const text = GLOSSARY_FILES[language].map((file) => gunzipSync(readFileSync(file)).toString('utf8')).join('\n');
    tables.set(language, (table = new LineTable(text, { skip: isCommentLine })));
  }
  return table;
}
