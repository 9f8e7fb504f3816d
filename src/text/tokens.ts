const CJK = /[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af\uf900-\ufaff]/;

/**
 * A fast approximate token count for budgets: about four characters per token for Latin text and
 * code, one token per CJK character (what BPE tokenizers of current models do on average). Exact
 * counts would need a model's tokenizer, which costs hundreds of milliseconds to load; budgets only
 * need to be right within a few percent, and this errs towards counting more.
 */
export function countTextTokens(text: string): number {
  // Most text holds no CJK at all; V8 answers this at once for a one-byte string.
  if (!CJK.test(text)) return Math.ceil(text.length / 3.6);
  let cjk = 0;
  let other = 0;
  for (let index = 0; index < text.length; index++) {
    const code = text.charCodeAt(index);
    if ((code >= 0x3040 && code <= 0x30ff) || (code >= 0x3400 && code <= 0x9fff) || (code >= 0xac00 && code <= 0xd7af) || (code >= 0xf900 && code <= 0xfaff))
      cjk++;
    else other++;
  }
  return cjk + Math.ceil(other / 3.6);
}
