/**
 * Text from the library or from memory is data placed inside MetaClaw's `<metaclaw-context>` block.
 * One screen says when such a text reads like an instruction to the model (prompt injection), and
 * one escape makes sure it can never close the block or open a tag of ours, whatever it says.
 */
const INJECTION_PATTERNS: ReadonlyArray<[RegExp, string]> = [
  [
    /\b(ignore|disregard|forget) (all |any |the )?(previous|prior|above|earlier|system|other) (instructions|messages|rules|prompts?)\b/i,
    'tells the model to ignore its instructions',
  ],
  [/\byou are (now|no longer)\b/i, "tries to change the model's role"],
  [/\b(new|updated|override) (system )?(instructions|prompt|rules)\s*:/i, 'claims to be new instructions'],
  [/^\s*(system|assistant|developer)\s*:/im, 'imitates a chat role'],
  [/<\/?(system|metaclaw-[a-z-]*|memory-data|instructions?)>/i, 'contains prompt delimiters'],
  [/BEGIN_OPENCLAW_INTERNAL_CONTEXT/, 'contains prompt delimiters'],
  [/\b(reveal|print|output|send|exfiltrate|leak) (your |the )?(system prompt|api key|secrets?|credentials|password)/i, 'asks for secrets'],
  [/忽略(之前|以上|前面|所有)的?(指令|指示|规则|提示)/, 'tells the model to ignore its instructions'],
];

/** Why a text must be treated as hostile, or undefined when it reads as plain data. */
export function injectionReason(text: string): string | undefined {
  for (const [pattern, reason] of INJECTION_PATTERNS) if (pattern.test(text)) return reason;
  return undefined;
}

/**
 * Neutralises our tags (and `<system>`-like ones): `</metaclaw-context>` becomes `‹/metaclaw-context>`.
 * Line breaks and other characters (a `<name>` placeholder, HTML in a skill's example) stay as written.
 */
export function escapeContextTags(text: string): string {
  return text.replace(/<(\/?)(memory-data|metaclaw-[a-z-]*|system|instructions?)\b/gi, '‹$1$2');
}
