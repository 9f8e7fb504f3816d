import { termOf } from './tokenize.js';

/**
 * What a quantity measures, read from its unit: "4.3 kg" is a weight, "35 minutes" a time, "€65"
 * or "415,000 euros" a price, "1000毫克" a dose. A question asks with the dimension ("how heavy is
 * the cat now", "what did the house cost", "多少钱"), the memory states the amount: indexed with
 * the dimension's words as related words, the one finds the other without a word in common.
 * (Dev histories, recall@10, with the score below: dev-xl 63.9 → 69.0 %, dev 89 → 90 %, no set
 * lower; see test/fixtures/dev-recall/README.md.)
 */
// A number starts where no digit stands before it and is at most 16 characters long: unbounded, a
// pasted run of numbers ("1.5,2.5,…", 80 KB) was matched from each of its digits to its end, 31 s.
// A number word stands apart from its unit ("an hour", "a mile"): run together, "a" and a unit's
// letter are a word of their own ("am", "ah": "I am", "4 am" read as metres).
const NUMBER = String.raw`(?:(?<![\d,.])\d[\d,.]{0,15}\s?|(?<![一二两三四五六七八九十百千万半几])[一二两三四五六七八九十百千万半几]{1,8}\s?|\b(?:an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen|twenty|thirty|forty|fifty|sixty|ninety|hundred|thousand|half an?|a couple of|a few|several)\s)`;

interface Dimension {
  /** Unit words after a number. */
  after: string;
  /** Currency signs and codes before one. */
  before?: string;
  /**
   * The English words a question asks about the dimension with. English only: related words are
   * searched for English query terms, and a Chinese or Japanese question reaches them through its
   * words' translations ("多少钱" → money, "剂量" → dose, "体重" → weight).
   */
  words: readonly string[];
}

const DIMENSIONS: readonly Dimension[] = [
  { after: String.raw`kgs?|kilos?|kilograms?|grams?|g|lbs?|pounds?|公斤|千克|斤|克|キロ|グラム`, words: ['weight', 'weigh', 'heavy'] },
  { after: String.raw`km|kms|kilomet(?:re|er)s?|miles?|mi|met(?:re|er)s?|m|公里|千米|米|メートル`, words: ['distance', 'far', 'long'] },
  { after: String.raw`min|mins|minutes?|hours?|hrs?|h|分钟|小时|个小时|時間`, words: ['long', 'time', 'duration'] },
  {
    before: String.raw`[€$£¥]|CAD|USD|EUR|RMB`,
    after: String.raw`€|euros?|dollars?|bucks|pounds?|quid|cad|usd|eur|rmb|yuan|元|块|欧元|美元|加元|万元|円`,
    words: ['cost', 'price', 'pay', 'expensive', 'cheap', 'money', 'spend', 'afford'],
  },
  { after: String.raw`°C|°F|degrees?|度`, words: ['temperature', 'hot', 'cold', 'warm'] },
  { after: String.raw`mg|mcg|iu|ml|毫克|毫升`, words: ['dose', 'dosage'] },
  { after: String.raw`cm|centimet(?:re|er)s?|厘米`, words: ['tall', 'height'] },
];

const PATTERNS = DIMENSIONS.map(({ before, after, words }) => {
  // The unit is a word of its own ("5 m", "5 minutes"; not the "m" of "5 more").
  const amount = String.raw`${NUMBER}(?:${after})(?![a-z])`;
  return {
    pattern: new RegExp(before ? String.raw`(?:${before})\s?${NUMBER}|${amount}` : amount, 'i'),
    terms: [...new Set(words.map((word) => termOf(word)).filter((term): term is string => term !== undefined))],
  };
});

/** A mark out of a whole ("78 out of 100", "42 points", "考了90分") is a score ("8/10" is too often a date). */
const SCORE = {
  pattern: /\b\d+(?:\.\d+)? out of (?:5|10|20|100)\b|\b\d+ ?(?:points|pts)\b|[考得拿]了?\d+分/i,
  terms: ['score', 'mark', 'grade', 'result'].map((word) => termOf(word)).filter((term): term is string => term !== undefined),
};

/** The search terms of the dimensions of the quantities a text states (none for a text without one). */
export function measureTerms(text: string): string[] {
  const found = new Set<string>();
  for (const { pattern, terms } of [...PATTERNS, SCORE]) if (pattern.test(text)) for (const term of terms) found.add(term);
  return [...found];
}

/** Changes with the table: an index written with another one is rebuilt (see `indexWordsVersion`). */
export const MEASURES_VERSION = 'measures-4';
