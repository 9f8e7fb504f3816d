/**
 * Japanese writes most technical words as English loanwords in katakana (インシデント "incident",
 * メトリクス "metrics", シャッフル "shuffle", ポストモーテム "postmortem"), and a dictionary never
 * holds them all. Both spellings keep the English word's consonants in order, so a katakana word
 * and an English search term are compared by a sound key: their consonants, in classes that
 * Japanese does not tell apart (l and r, v and b, s and z), with the vowels Japanese adds between
 * consonants, and the r English leaves silent after a vowel ("mortem" is モーテム), left out.
 */

/** The consonant class each katakana stands for ('' for vowels, the long mark, the small and the doubling kana). */
const KANA_CONSONANTS: Record<string, string> = {};
for (const [consonant, kana] of [
  ['', 'アイウエオァィゥェォヤユヨャュョワヲヮーッ・'],
  ['k', 'カキクケコヵヶ'],
  ['g', 'ガギグゲゴ'],
  ['s', 'サシスセソザズゼゾ'],
  ['j', 'ジヂ'],
  ['t', 'タチツテト'],
  ['d', 'ダヅデド'],
  ['n', 'ナニヌネノン'],
  ['h', 'ハヒヘホ'],
  ['f', 'フ'],
  ['b', 'バビブベボヴ'],
  ['p', 'パピプペポ'],
  ['m', 'マミムメモ'],
  ['r', 'ラリルレロ'],
] as const)
  for (const character of kana) KANA_CONSONANTS[character] = consonant;

const KATAKANA_WORD = /^[\u30a1-\u30fa\u30fc]+$/;

/** The sound key of a katakana word; undefined for anything else. */
export function katakanaKey(word: string): string | undefined {
  if (!KATAKANA_WORD.test(word)) return undefined;
  let key = '';
  for (const character of word) {
    const consonant = KANA_CONSONANTS[character] ?? '';
    if (consonant !== '' && !key.endsWith(consonant)) key += consonant;
  }
  return key;
}

/** English spellings of one sound, rewritten to the class katakana gives it (in this order). */
const ENGLISH_SPELLINGS: Array<[RegExp, string]> = [
  [/ph/g, 'f'],
  [/(?:th|sh|ss)/g, 's'],
  [/tch|ch/g, 't'],
  [/ck|q/g, 'k'],
  [/x/g, 'ks'],
  [/[wg]h/g, ''],
  [/ti(?=on)/g, 's'],
  [/c(?=[eiy])/g, 's'],
  [/c/g, 'k'],
  [/g(?=[eiy])/g, 'j'],
  [/z/g, 's'],
  [/l/g, 'r'],
  [/v/g, 'b'],
  // A nasal before b or p is written ン.
  [/m(?=[bp])/g, 'n'],
  // Silent r: after a vowel and before a consonant or at the end ("server" サーバー, "mortem" モーテム).
  [/([aeiouy])r(?=[^aeiouy]|$)/g, '$1'],
  [/[aeiouyw]/g, ''],
  [/(.)\1+/g, '$1'],
];

/** The sound key of an English word or search term (lower-case letters). */
export function englishKey(word: string): string {
  let key = word;
  for (const [spelling, sound] of ENGLISH_SPELLINGS) key = key.replace(spelling, sound);
  return key;
}
