/**
 * Dictionary forms a Japanese inflected word may come from. The segmenter returns what a sentence
 * holds ("書き", "使っ", "作成し", or "撮" before "って"), while a dictionary holds verbs and
 * adjectives in their dictionary form ("書く", "使う", "作成", "撮る"). These few rules undo the
 * regular conjugations (godan and ichidan verbs and their potential forms, する-verbs, い-adjectives)
 * without a morphological analyser; the glossary keeps the first candidate it holds, so a wrong
 * guess costs nothing.
 */

/** The godan conjugation rows: a kana of the a-, i-, e- or o-row → the u-row kana of its dictionary form. */
const GODAN: Record<string, string> = {};
for (const [u, row] of Object.entries({
  く: 'かきけこ',
  ぐ: 'がぎげご',
  す: 'さしせそ',
  つ: 'たちてと',
  ぬ: 'なにねの',
  ぶ: 'ばびべぼ',
  む: 'まみめも',
  る: 'らりれろ',
  う: 'わいえお',
}))
  for (const kana of row) GODAN[kana] = u;

const A_ROW = new Set('かがさたなばまらわ');
const I_ROW = new Set('きぎしちにびみりい');
/** "へ" is left out: after a noun it is the particle, not a verb's e-row. */
const E_ROW = new Set('けげせてねべめれえ');
const O_ROW = new Set('こごそとのぼもろお');

const KANJI = /[\u3400-\u9fff\uf900-\ufaff々]/;
const HIRAGANA = /^[\u3040-\u309f]+$/;

/** What follows the bare stem of an ichidan verb ("見" + "て", "食べ" is the other case). */
const ICHIDAN_ENDING = /^(?:て|た|ます|ません|ない|なかっ|られ|させ|よう|ろ)/;
/** What follows the stem of an い-adjective ("多" + "すぎる", "高" + "かった"). */
const ADJECTIVE_ENDING = /^(?:く|かっ|けれ|さ|すぎ|そう)/;
/** What follows a godan verb's a-row (negative, passive, causative): not a particle ("が", "は"). */
const NEGATIVE_ENDING = /^(?:な|れ|せ|ず|さ)/;

/**
 * Candidate dictionary forms of `word` (one or more joined segments with a kanji), given the text of
 * the segment after it, most likely first; empty when nothing in it looks inflected.
 */
export function dictionaryForms(word: string, next: string): string[] {
  if (!KANJI.test(word)) return [];
  const last = word.at(-1)!;
  if (KANJI.test(last)) return afterStem(word, next);
  let stem = word.length;
  while (stem > 0 && !KANJI.test(word[stem - 1]!)) stem--;
  // Only an okurigana tail in hiragana inflects ("書き"); a katakana word does not.
  if (stem === 0 || !HIRAGANA.test(word.slice(stem))) return [];
  return ending(word.slice(0, -1), last, next);
}

/** A word ending in kanji, with its inflection in the next segment ("撮" + "って", "多" + "すぎる"). */
function afterStem(stem: string, next: string): string[] {
  const forms: string[] = [];
  const kana = next[0];
  if (kana === undefined || !HIRAGANA.test(kana)) return forms;
  const after = next.slice(1);
  if (kana === 'っ' || kana === 'ん' || kana === 'い') forms.push(...ending(stem, kana, after));
  else if (I_ROW.has(kana) && next !== 'に') forms.push(stem + GODAN[kana]!, `${stem}${kana}る`);
  else if (A_ROW.has(kana) && NEGATIVE_ENDING.test(after)) forms.push(stem + GODAN[kana]!);
  else if (E_ROW.has(kana)) forms.push(`${stem}${kana}る`, stem + GODAN[kana]!);
  else if (O_ROW.has(kana) && after.startsWith('う')) forms.push(stem + GODAN[kana]!);
  if (ICHIDAN_ENDING.test(next)) forms.push(`${stem}る`);
  if (ADJECTIVE_ENDING.test(next)) forms.push(`${stem}い`);
  return forms;
}

/** `prefix` + its last kana `kana` (the inflected one), followed by `after`. */
function ending(prefix: string, kana: string, after: string): string[] {
  switch (kana) {
    // The euphonic forms of the te- and ta-forms: "使って", "読んで", "書いて".
    case 'っ':
      return [`${prefix}う`, `${prefix}つ`, `${prefix}る`];
    case 'ん':
      return [`${prefix}む`, `${prefix}ぶ`, `${prefix}ぬ`];
    case 'い':
      return /^[てたでだ]/.test(after) ? [`${prefix}く`, `${prefix}ぐ`, `${prefix}う`, `${prefix}いる`] : [`${prefix}う`, `${prefix}いる`];
    case 'く':
      // An adjective's adverbial form ("新しく"); a godan verb in く is its own dictionary form.
      return [`${prefix}い`];
    case 'る':
      return potential(prefix);
  }
  const forms: string[] = [];
  if (I_ROW.has(kana)) forms.push(prefix + GODAN[kana]!, `${prefix}${kana}る`);
  else if (E_ROW.has(kana)) forms.push(`${prefix}${kana}る`, prefix + GODAN[kana]!);
  else if (A_ROW.has(kana)) forms.push(prefix + GODAN[kana]!);
  // A する-verb's continuative or negative stem ("作成し", "削除さ"): the noun is the headword.
  if ((kana === 'し' || kana === 'さ' || kana === 'せ') && KANJI.test(prefix.at(-1)!)) forms.push(prefix);
  return forms;
}

/**
 * A verb ending in an e-row kana and "る" ("戻せる", "書ける", "使える", one segment each) is an ichidan
 * verb in its dictionary form ("見せる": the word itself, tried first) or a godan verb's potential
 * form ("can undo": "戻す"); "られる" follows an ichidan stem ("食べられる": "食べる").
 */
function potential(prefix: string): string[] {
  const forms = [`${prefix}る`];
  if (prefix.length > 2 && prefix.endsWith('られ')) forms.push(`${prefix.slice(0, -2)}る`);
  const kana = prefix.at(-1)!;
  if (E_ROW.has(kana)) forms.push(prefix.slice(0, -1) + GODAN[kana]!);
  return forms;
}
