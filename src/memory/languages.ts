/** Languages told apart by script, which is what search keys need: the words of a later question. */
export type ScriptLanguage = 'en' | 'zh' | 'ja' | 'ko';

const KANA = /[\u3040-\u30ff]/;
const HANGUL = /[\uac00-\ud7af]/;
const HAN = /[\u3400-\u9fff\uf900-\ufaff]/;
/** A few Latin-script words make a text count as written in English (other Latin-script languages read as it too). */
const LATIN_WORDS = /\b[a-z]{3,}\b.*\b[a-z]{3,}\b.*\b[a-z]{3,}\b/is;

/** The languages some texts are written in, by script (a text may have several). */
export function languagesOf(texts: readonly string[]): Set<ScriptLanguage> {
  const found = new Set<ScriptLanguage>();
  for (const text of texts) {
    if (KANA.test(text)) found.add('ja');
    else if (HAN.test(text)) found.add('zh');
    if (HANGUL.test(text)) found.add('ko');
    if (LATIN_WORDS.test(text)) found.add('en');
  }
  return found;
}

const NAMES: Record<string, string> = { en: 'English', zh: 'Chinese', ja: 'Japanese', ko: 'Korean' };

export function languageName(code: string): string {
  return NAMES[code] ?? code;
}
