/**
 * Builds `data/glossary/zh-en-names.tsv.gz`: the Chinese proper nouns a person mentions in
 * conversation (places, holidays, exams, companies, languages, nationalities, given names:
 * 墨尔本 Melbourne, 春节 Spring Festival, 雅思 IELTS, 谷歌 Google, 约翰 John), which the main glossary
 * leaves out. Drawn from CC-CEDICT's entries with a capitalised reading, ranked by jieba's word
 * frequencies, the most frequent `--most` kept (see data/glossary/README.md). Run by hand:
 *
 *   node --import tsx scripts/build-glossary-names.ts --cedict <cc-cedict>/data/all.js \
 *     --jieba <cppjieba>/dict/jieba.dict.utf8
 *
 * A separate file, so the main glossaries need not be rebuilt; it reads the shipped `zh-en.tsv.gz`
 * (`--base`) only to tell which of its headwords the main file already has. The output is a function
 * of the inputs alone: the same sources give the same bytes.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { gunzipSync, gzipSync } from 'node:zlib';
import { relativeGloss } from '../src/text/kinship.js';
import { glossTermOf } from '../src/text/tokenize.js';
import { glossWords, plainWord, withoutNotes } from './gloss-words.js';

const here = resolve(import.meta.dirname, '..', 'data', 'glossary');
const { values } = parseArgs({
  options: {
    cedict: { type: 'string' },
    jieba: { type: 'string' },
    base: { type: 'string', default: join(here, 'zh-en.tsv.gz') },
    // Every name jieba holds (`--most N`: the N most frequent; 4,000 until December 2026).
    most: { type: 'string', default: 'Infinity' },
    out: { type: 'string', default: here },
  },
});
if (!values.cedict || !values.jieba) throw new Error('--cedict and --jieba are required');
const MOST = Number(values.most);

/** English words per name: the name itself, and a second or third when it is several words ("Spring Festival"). */
const MAX_WORDS = 3;
/** Name words added after the senses of a headword the main file has. */
const NAME_AFTER_WORD = 2;
/** A gloss naming a company, brand, app or website. */
const BRAND = /\b(company|corporation|brand|app|search engine|social (network|networking|media)|messaging|e-commerce|website|smartphone)\b/i;
const CJK_ONLY = /^[\u3400-\u9fff\uf900-\ufaff]{2,6}$/;
/** Senses that are no name of their own: cross-references, surnames, abbreviations. */
const NOT_A_NAME = /^(old |archaic |Japanese )?variant of|^see |^surname |^used in |^abbr\. |^erhua variant|^CL:|^classifier |^(also |Taiwan )?pr\./i;
/**
 * A cross-reference to the entry that holds a name's senses: CC-CEDICT writes most cities and
 * provinces under their full official form and the name people say as a pointer to it ("杭州":
 * "see 杭州市[Hang2 zhou1 Shi4]", "四川": "see 四川省[…]"). The simplified headword pointed to (after a
 * "|" when both forms are given), read up to its pinyin.
 */
const SEE = /^see (?:also )?(?:[^\s|[]+\|)?([\u3400-\u9fff\uf900-\ufaff]+)\[/;
/** A historical person ("Cao Cao (155-220)", "Nikola Tesla (1856–1943)"): years in the gloss. */
const LIFETIME = /\d{3,4}\s*[-–]|\b\d{3,4}\s*BC\b|\bc\. ?\d{3}/;
/** jieba's part-of-speech tags of proper nouns: person, place, organisation, other. */
const PROPER_TAG = /^n(r|rt|rfg|s|t|z)$/;

/** jieba: word → count and part-of-speech tag. */
const jieba = new Map<string, { count: number; tag: string }>();
for (const line of readFileSync(values.jieba, 'utf8').split('\n')) {
  const [word, count, tag] = line.split(' ');
  if (word && count) jieba.set(word, { count: Number(count), tag: tag ?? '' });
}

/** The main glossary's lines: headword → its English words. */
const base = new Map<string, string>();
for (const line of gunzipSync(readFileSync(values.base)).toString('utf8').split('\n')) {
  const tab = line.indexOf('\t');
  if (tab > 0 && !line.startsWith('#')) base.set(line.slice(0, tab), line.slice(tab + 1));
}

/**
 * The English words of a name's sense: the part before its first comma or semicolon (the name; what
 * follows describes it: "Sydney, capital of New South Wales"), without notes in brackets. A
 * hyphenated name is its parts, as an English text holding it is tokenized ("Mid-Autumn").
 */
function nameWords(sense: string): string[] {
  const name = withoutNotes(sense).split(/[,;]/)[0]!;
  return Array.from(name.matchAll(/[A-Za-z]+(?:'[a-z]+)?/g), (match) => plainWord(match[0]));
}

type CedictEntry = [traditional: string, simplified: string, pinyin: string, glosses: string | string[], ...rest: unknown[]];
const cedict = ((await import(resolve(values.cedict))) as { default: { all: CedictEntry[] } }).default.all;
/** Headword → the senses of its proper-noun entries, in the dictionary's order. */
const names = new Map<string, string[]>();
/** Headwords that name a historical person (their other senses are about that person: "曹操": main villain of a novel). */
const historical = new Set<string>();
/** Headwords whose name entries only point to another (`SEE`): headword → the headword pointed to. */
const pointers = new Map<string, string>();
for (const [, simplified, pinyin, glosses] of cedict) {
  if (!CJK_ONLY.test(simplified) || !/^[A-Z]/.test(pinyin)) continue;
  const all = Array.isArray(glosses) ? glosses : [glosses];
  if (all.some((gloss) => LIFETIME.test(gloss))) historical.add(simplified);
  const kept = all.filter((gloss) => !NOT_A_NAME.test(gloss));
  if (kept.length > 0) names.set(simplified, [...(names.get(simplified) ?? []), ...kept]);
  const target = all.length === 1 ? SEE.exec(all[0]!)?.[1] : undefined;
  if (target !== undefined && target !== simplified && !pointers.has(simplified)) pointers.set(simplified, target);
}
const pointed = new Set<string>();
// A name written as a pointer takes the senses of the entry it points to (one step: the target's own
// senses, not another pointer), unless it has senses of its own.
for (const [word, target] of pointers) {
  const senses = names.get(target);
  if (!names.has(word) && senses && !historical.has(target)) {
    names.set(word, senses);
    pointed.add(word);
  }
}

const rows: Array<{ word: string; words: string[]; count: number; pointer?: true }> = [];
/** Modern companies, brands and apps jieba's older word list lacks ("谷歌": Google, "微信": WeChat), told by their gloss. */
const brands: typeof rows = [];
for (const [word, senses] of names) {
  if (historical.has(word)) continue;
  const seen = jieba.get(word);
  const main = base.get(word);
  const words = glossWords(senses, nameWords, MAX_WORDS);
  if (words.length === 0) continue;
  if (!seen) {
    if (main === undefined && BRAND.test(senses.join('; '))) brands.push({ word, words, count: 0 });
    continue;
  }
  // A headword the main file has is a common word first ("武功": martial art, not Wugong County):
  // the name is added after its senses, and only where jieba tags the word a proper noun ("托福": TOEFL).
  if (main !== undefined && !PROPER_TAG.test(seen.tag)) continue;
  rows.push({
    word,
    words: main ? [...main.split(' '), ...words.slice(0, NAME_AFTER_WORD)] : words,
    count: seen.count,
    ...(pointed.has(word) ? { pointer: true as const } : {}),
  });
}
const byWord = (a: { word: string }, b: { word: string }) => (a.word < b.word ? -1 : a.word > b.word ? 1 : 0);
rows.sort((a, b) => b.count - a.count || byWord(a, b));
// The `MOST` most frequent names with senses of their own, and the names written as pointers that are
// as frequent as the last of them: the pointers add names without pushing rarer ones out.
const kept = new Set(rows.filter((row) => !row.pointer).slice(0, MOST));
const least = Math.min(...[...kept].map((row) => row.count));
rows.splice(0, rows.length, ...rows.filter((row) => kept.has(row) || (row.pointer && row.count >= least)));
rows.push(...brands.sort(byWord));

/**
 * Names that are the usual translation of their English word: the reverse look-up (English → Chinese,
 * src/text/glossary.ts) takes the first headword in file order whose first gloss word is the English
 * word, and the main file comes first, so "china" reached 一中一台 ("one China, one Taiwan") and never
 * 中国, "french" 薯条 (French fries), "france" 法郎 (the franc). A name goes to
 * `zh-en-names-first.tsv.gz`, read before the main file, when jieba counts it more often than that first
 * headword, its gloss is the one word (a longer name's first word is an ordinary word: "united states",
 * "yellow river", "three gorges"), and jieba does not tag it a person's name (贝尔 "bell", 亨特 "hunter").
 */
const firstByStem = new Map<string, string>();
for (const [headword, gloss] of base) {
  if (headword.length < 2 || relativeGloss(headword) !== undefined) continue;
  const stem = glossTermOf(gloss.split(' ')[0]!);
  if (stem !== undefined && !firstByStem.has(stem)) firstByStem.set(stem, headword);
}
const PERSON_TAG = /^nr/;
const ahead = rows.filter((row) => {
  const stem = row.words.length === 1 && !base.has(row.word) ? glossTermOf(row.words[0]!) : undefined;
  const rival = stem === undefined ? undefined : firstByStem.get(stem);
  const seen = jieba.get(row.word);
  return rival !== undefined && seen !== undefined && !PERSON_TAG.test(seen.tag) && seen.count > (jieba.get(rival)?.count ?? 0);
});
const readFirst = new Set(ahead);
rows.splice(0, rows.length, ...rows.filter((row) => !readFirst.has(row)));

const header =
  '# Chinese proper nouns → English, from CC-CEDICT (CC BY-SA 4.0), ranked by the word frequencies of jieba (MIT)\n' +
  '# Generated by scripts/build-glossary-names.ts; see data/glossary/README.md for sources and licences.\n' +
  "# headword<TAB>English gloss words; read after zh-en.tsv.gz: a headword both hold has this line (the main line's words first)\n";
const text = `${header}${rows.map((row) => `${row.word}\t${row.words.join(' ')}`).join('\n')}\n`;
writeFileSync(join(values.out, 'zh-en-names.tsv.gz'), gzipSync(text, { level: 9 }));
const firstHeader =
  '# Chinese proper nouns that are the usual translation of their English word ("china": 中国), from CC-CEDICT (CC BY-SA 4.0) and jieba (MIT)\n' +
  '# Generated by scripts/build-glossary-names.ts; see data/glossary/README.md for sources and licences.\n' +
  '# headword<TAB>English gloss word; read before zh-en.tsv.gz, so the English → Chinese look-up finds these first\n';
writeFileSync(
  join(values.out, 'zh-en-names-first.tsv.gz'),
  gzipSync(`${firstHeader}${ahead.map((row) => `${row.word}\t${row.words.join(' ')}`).join('\n')}\n`, { level: 9 }),
);
process.stdout.write(
  `zh-en-names: ${rows.length} headwords, and ${ahead.length} read first (` +
    `${rows.filter((row) => base.has(row.word)).length} adding to a line of the main file, ${rows.filter((row) => row.pointer).length} names written as pointers, ${brands.length} companies and apps jieba lacks)\n`,
);
