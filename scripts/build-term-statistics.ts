/**
 * Builds data/term-statistics.json: how many sentences of a general English, Chinese and Japanese
 * corpus hold each search term, counted with the project's own tokenizer so the terms are exactly
 * the ones the skill and memory indexes hold. Retrieval blends these background document
 * frequencies with a library's own (src/text/term-statistics.ts).
 *
 * Input: Tatoeba sentence pairs as manythings.org exports them (one pair a line: English, a tab,
 * the other language, optionally a tab and the attribution), one file per language:
 *
 *   node --import tsx scripts/build-term-statistics.ts zh=path/to/cmn.txt ja=path/to/jpn.txt
 *
 * `--keep en,ja` keeps those languages' counts from the shipped file and rebuilds the others (after
 * a tokenizer change that touches one language: the counts of the others stay as measured).
 *
 * Each distinct sentence is one document; the English sides of all files form the English corpus.
 * Terms held by a single sentence are left out (they weigh as much as unseen ones).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { tokenize } from '../src/text/index.js';

const OUTPUT = new URL('../data/term-statistics.json', import.meta.url);
const MIN_DOCUMENTS = 2;

const args = process.argv.slice(2);
const keepAt = args.indexOf('--keep');
const keptLanguages = new Set(keepAt < 0 ? [] : (args[keepAt + 1] ?? '').split(',').filter(Boolean));
const sources = (keepAt < 0 ? args : [...args.slice(0, keepAt), ...args.slice(keepAt + 2)]).map((argument) => {
  const [language, path] = argument.split('=');
  if (!language || !path) throw new Error(`expected language=path, got ${argument}`);
  return { language, path };
});
if (sources.length === 0) throw new Error('usage: build-term-statistics.ts zh=cmn.txt ja=jpn.txt');

const sentences = new Map<string, Set<string>>([['en', new Set()]]);
for (const { language, path } of sources) {
  const own = new Set<string>();
  sentences.set(language, own);
  for (const line of readFileSync(path, 'utf8')
    .replace(/^\uFEFF/, '')
    .split('\n')) {
    const [english, other] = line.split('\t');
    if (english?.trim()) sentences.get('en')!.add(english.trim());
    if (other?.trim()) own.add(other.trim());
  }
}

type LanguageCounts = { documents: number; terms: number; frequencies: Record<string, string> };
const shipped = keptLanguages.size > 0 ? (JSON.parse(readFileSync(OUTPUT, 'utf8')) as { languages: Record<string, LanguageCounts> }).languages : {};
const languages: Record<string, LanguageCounts> = {};
for (const [language, texts] of sentences) {
  if (keptLanguages.has(language)) {
    if (!shipped[language]) throw new Error(`--keep ${language}: the shipped file has no ${language}`);
    languages[language] = shipped[language];
    process.stderr.write(`${language}: kept as shipped\n`);
    continue;
  }
  const counts = new Map<string, number>();
  let terms = 0;
  for (const text of texts) {
    const found = tokenize(text);
    terms += found.length;
    for (const term of new Set(found)) counts.set(term, (counts.get(term) ?? 0) + 1);
  }
  const byCount = new Map<number, string[]>();
  for (const [term, count] of counts) if (count >= MIN_DOCUMENTS) byCount.set(count, [...(byCount.get(count) ?? []), term]);
  const frequencies: Record<string, string> = {};
  for (const count of [...byCount.keys()].sort((a, b) => b - a)) frequencies[String(count)] = byCount.get(count)!.sort().join(' ');
  languages[language] = { documents: texts.size, terms, frequencies };
  const kept = [...byCount.values()].reduce((sum, terms) => sum + terms.length, 0);
  process.stderr.write(`${language}: ${texts.size} sentences, ${counts.size} terms, ${kept} kept\n`);
}

const file = {
  about:
    'Background document frequencies for retrieval: for each language, how many sentences (documents) of a general corpus hold each search term, and how many terms they hold in all (terms as src/text/tokenize.ts makes them; terms held by one sentence left out). Built by scripts/build-term-statistics.ts from Tatoeba sentences (tatoeba.org, CC BY 2.0 FR). See data/README.md.',
  version: 1,
  tokenizer: `Intl.Segmenter of Node ${process.version} (ICU ${process.versions.icu}), stop words and Porter stemming of src/text/tokenize.ts`,
  languages,
};
writeFileSync(OUTPUT, `${JSON.stringify(file, null, 1)}\n`);
