/**
 * The language a piece of text is written in, by its script: enough to tell which languages a user
 * writes in (for search keys and cross-lingual search), not a language identifier. Kana means
 * Japanese; Han characters without kana, Chinese; Hangul, Korean; Latin letters, English (the
 * language MetaClaw's English-script users nearly all write to an agent in).
 */
export type ScriptLanguage = 'en' | 'zh' | 'ja' | 'ko';

const KANA = /[\u3040-\u30ff]/g;
const HAN = /[\u3400-\u9fff\uf900-\ufaff]/g;
const HANGUL = /[\uac00-\ud7af]/g;
const LATIN = /[A-Za-z]/g;

/** The text's language, or undefined when it has too few letters to tell (a number, an emoji). */
export function languageOf(text: string): ScriptLanguage | undefined {
  const sample = text.length > 2_000 ? text.slice(0, 2_000) : text;
  const count = (pattern: RegExp) => sample.match(pattern)?.length ?? 0;
  // A Chinese or Japanese request often carries English technical words ("帮我写一个 SQL 查询"): two
  // characters of the script decide.
  if (count(KANA) >= 2) return 'ja';
  if (count(HAN) >= 2) return 'zh';
  if (count(HANGUL) >= 2) return 'ko';
  if (count(LATIN) >= 3) return 'en';
  return undefined;
}
