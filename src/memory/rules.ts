import { jaccard, sharedCount, tokenize } from '../text/index.js';

/**
 * Standing instructions stated in plain words ("always…", "never…", "we require…", "all output
 * files must…", "以后都用中文写提交信息"). Found without any LLM, in English and Chinese, and kept
 * as the user's own sentence, word for word: a rewrite could flip a negation or drop a number.
 */
const ENGLISH_RULE = [
  /\b(always|never|from now on|going forward|in (the )?future|every time|each time|whenever)\b/i,
  /\b(we|you|i|they|everyone|everybody)\s+(must|should|need to|have to|are required to|require|shall)\b/i,
  /\b(all|every|each|any)\s+[\w\s-]{1,30}\b(must|should|need to|needs to|have to|has to|are required to|is required to)\b/i,
  /\bwe require\b|\brequired:/i,
  /^\s*(please\s+)?(don't|do not|stop|avoid|never)\b/i,
  /^\s*please\s+(always|use|keep|make|write|name|put|reply|answer|respond|format)\b/i,
  /\b(i prefer|i'd prefer|i would prefer|my preference is|i like it when|i want you to)\b/i,
  /\b(our|the|my) (convention|rule|policy|standard|style) (is|says)\b/i,
];
const CHINESE_RULE = [/(以后|今后|从现在起|从今以后|每次|一律|总是|始终|永远|务必|必须|一定要|不要|别再|禁止|不许|不准|统一|请用|都用|都要)/];
/** Questions and hypotheticals state no rule. */
const NOT_A_RULE = [
  /\?\s*$/,
  /？\s*$/,
  /^\s*(if|what if|should i|can you|could you|would you|do you|does|is it|are there|how|why|when|what)\b/i,
  /^\s*(如果|假如|是否|能不能|可不可以|怎么|为什么|吗)/,
];

export interface StatedRule {
  sentence: string;
}

/** The sentences of `text` that state a rule or lasting preference, verbatim. */
export function detectRules(text: string): StatedRule[] {
  const rules: StatedRule[] = [];
  for (const sentence of splitSentences(text)) {
    const trimmed = sentence.trim();
    if (trimmed.length < 8 || trimmed.length > 400) continue;
    if (NOT_A_RULE.some((pattern) => pattern.test(trimmed))) continue;
    const isRule = ENGLISH_RULE.some((pattern) => pattern.test(trimmed)) || CHINESE_RULE.some((pattern) => pattern.test(trimmed));
    if (isRule) rules.push({ sentence: trimmed });
  }
  return rules;
}

function splitSentences(text: string): string[] {
  return text
    .replace(/```[\s\S]*?```/g, ' ')
    .split(/(?<=[.!。！；;])\s+|(?<=[。！；])|\n+/)
    .map((sentence) => sentence.replace(/^[-*•\d.)\s]+/, ''))
    .filter(Boolean);
}

/** Words that make a sentence a rule but say nothing about what the rule is about. */
const RULE_WORDS = new Set(
  tokenize(
    'always never must should need have required require requires from now on going forward future change plan every each all any please make sure prefer preference rule policy convention standard style instead rather 以后 今后 从现在起 每次 一律 总是 始终 永远 务必 必须 一定要 不要 别再 禁止 不许 不准 统一 请用 都用 都要 改成 改为',
  ),
);

/**
 * What a rule is about: its content words without the rule words. "all output files must be named
 * YYYYMMDD_<name>" and "change of plan: all output files must be named <name>_final" are both
 * about "output files named".
 */
export function ruleSubject(sentence: string): Set<string> {
  return new Set(tokenize(sentence).filter((term) => !RULE_WORDS.has(term)));
}

/** Whether two rule subjects are about the same thing (so the newer rule replaces the older). */
export function sameSubject(a: Set<string>, b: Set<string>): boolean {
  if (a.size === 0 || b.size === 0) return false;
  const shared = sharedCount(a, b);
  return jaccard(a, b) > 0.5 || (shared >= 2 && shared / Math.min(a.size, b.size) >= 0.75);
}
