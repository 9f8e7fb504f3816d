import { secretRules, type SecretRule } from './secret-rules.js';

/**
 * Finds secrets in text by the rules of `data/secret-rules.json` and replaces each with a marker
 * naming its rule, `[redacted github-token]`; the context around it (`AWS_SECRET_ACCESS_KEY=`)
 * stays, so a memory still says what was there. One scan for the rules' keywords decides which
 * rules run at all: text that holds none of them costs that scan and nothing else.
 */
export class SecretScanner {
  private readonly keywordPattern: RegExp;
  /** For each keyword, every keyword it contains (itself included): a match for the longer one found the shorter. */
  private readonly implied = new Map<string, string[]>();
  /** Rules without keywords run on every text. */
  private readonly alwaysRun: readonly SecretRule[];

  constructor(private readonly rules: readonly SecretRule[]) {
    const keywords = [...new Set(rules.flatMap((rule) => rule.keywords))].sort((a, b) => b.length - a.length);
    for (const keyword of keywords)
      this.implied.set(
        keyword,
        keywords.filter((other) => keyword.includes(other)),
      );
    // Case-sensitive over lower-cased text (measured a fifth faster than a case-insensitive scan);
    // '(?!)' never matches: an empty alternation would match everywhere.
    this.keywordPattern = new RegExp(keywords.length > 0 ? keywords.map(escapeRegex).join('|') : '(?!)', 'g');
    this.alwaysRun = rules.filter((rule) => rule.keywords.length === 0);
  }

  /** The text with every secret replaced by `[redacted <rule id>]` (the same string when none). */
  redact(text: string): string {
    const rules = this.candidates(text);
    let result = text;
    // In file order, each on the previous one's output: a specific rule's marker is never re-read as a generic secret.
    for (const rule of rules) result = redactRule(rule, result);
    return result;
  }

  /** The rules whose keywords occur in `text`, in file order. */
  candidates(text: string): readonly SecretRule[] {
    const found = new Set<string>();
    const pattern = this.keywordPattern;
    const lower = text.toLowerCase();
    pattern.lastIndex = 0;
    for (let match = pattern.exec(lower); match; match = pattern.exec(lower)) {
      for (const keyword of this.implied.get(match[0]) ?? []) found.add(keyword);
      // From the next character, not the match's end: a keyword may start inside another.
      pattern.lastIndex = match.index + 1;
    }
    if (found.size === 0) return this.alwaysRun;
    return this.rules.filter((rule) => rule.keywords.length === 0 || rule.keywords.some((keyword) => found.has(keyword)));
  }
}

const MARKER = '[redacted ';

function redactRule(rule: SecretRule, text: string): string {
  const pattern = rule.pattern;
  pattern.lastIndex = 0;
  let result = '';
  let copied = 0;
  for (let match = pattern.exec(text); match; match = pattern.exec(text)) {
    if (match[0] === '' || (rule.startsWord && !startsWord(text, match.index))) {
      pattern.lastIndex = match.index + 1;
      continue;
    }
    const span = match.indices![rule.secretGroup] ?? match.indices![0]!;
    const secret = text.slice(span[0], span[1]);
    // A marker is never a secret itself: redacting twice changes nothing.
    if (text.startsWith(MARKER, span[0]) || !isSecret(rule, secret)) {
      // Look again right after the rejected value's start: a later secret may overlap this match's context.
      pattern.lastIndex = Math.max(match.index + 1, span[0] + 1);
      continue;
    }
    result += `${text.slice(copied, span[0])}${MARKER}${rule.id}]`;
    copied = span[1];
    pattern.lastIndex = span[1];
  }
  return copied === 0 ? text : result + text.slice(copied);
}

const WORD_CHAR = /[A-Za-z0-9_]/;

/** Nothing of a word before `index`; `\n`, `\r`, `\t` as written in JSON text count as a break. */
function startsWord(text: string, index: number): boolean {
  if (index === 0 || !WORD_CHAR.test(text[index - 1]!)) return true;
  return index >= 2 && text[index - 2] === '\\' && 'nrt'.includes(text[index - 1]!);
}

function isSecret(rule: SecretRule, secret: string): boolean {
  if (rule.entropy !== undefined && shannonEntropy(secret) < rule.entropy) return false;
  return !rule.allow.some((allow) => allow.test(secret));
}

/** Bits per character of the string's own character distribution. */
function shannonEntropy(text: string): number {
  const counts = new Map<string, number>();
  for (const char of text) counts.set(char, (counts.get(char) ?? 0) + 1);
  const length = [...text].length;
  let entropy = 0;
  for (const count of counts.values()) {
    const share = count / length;
    entropy -= share * Math.log2(share);
  }
  return entropy;
}

function escapeRegex(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\/-]/g, '\\$&');
}

let shipped: SecretScanner | undefined;

function shippedScanner(): SecretScanner {
  shipped ??= new SecretScanner(secretRules());
  return shipped;
}

/** Replaces every secret the shipped rules find with `[redacted <rule id>]`. */
export function redactSecrets(text: string): string {
  return shippedScanner().redact(text);
}

/** Whether the text holds a keyword of a shipped rule (a name like `api_key` that can give a value its meaning). */
export function mentionsSecretKeyword(text: string): boolean {
  return shippedScanner().candidates(text).length > 0;
}
