import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { ConfigError } from '../errors.js';
import { parseDataFile } from './data-file.js';

/**
 * The secret patterns are data (`data/secret-rules.json`, gitleaks-style rules), maintained and
 * reviewed like the prompts, not regexes scattered through the code. They are validated once, when
 * first used: a broken rule is an error naming the rule, never a pattern that silently matches
 * nothing.
 */
const RULES_FILE = new URL('../../data/secret-rules.json', import.meta.url);

const ruleSchema = z
  .object({
    id: z.string().regex(/^[a-z0-9]+(?:-[a-z0-9]+)*$/, 'expected lower-case words joined by "-"'),
    description: z.string().min(1),
    /** A JavaScript regular expression; {{name}} is replaced by the file's fragment of that name. */
    regex: z.string().min(1),
    ignoreCase: z.boolean().default(false),
    /**
     * The match starts a word: no letter, digit or underscore before it, or an escaped newline or
     * tab (JSON text). Checked by the scanner, not with \b or a lookbehind, so the regex keeps the
     * literal start that V8 searches for many times faster.
     */
    startsWord: z.boolean().default(false),
    /** The rule runs only on text that holds one of these (lower case, compared case-insensitively). */
    keywords: z
      .array(
        z
          .string()
          .min(2)
          .refine((keyword) => keyword === keyword.toLowerCase(), 'keywords are lower case'),
      )
      .default([]),
    /** Least Shannon entropy (bits per character) of the secret; below it the match is kept. */
    entropy: z.number().min(0).max(8).optional(),
    /** The capture group that is the secret (0: the whole match); the context around it stays. */
    secretGroup: z.number().int().min(0).default(0),
    /** A secret that matches one of these is kept (placeholders, code identifiers). */
    allow: z.array(z.string()).default([]),
  })
  .strict();

const fileSchema = z
  .object({
    about: z.string(),
    version: z.number().int().min(1),
    fragments: z.record(z.string().regex(/^\w+$/), z.string()).default({}),
    rules: z.array(ruleSchema).min(1),
  })
  .strict();

export interface SecretRule {
  id: string;
  description: string;
  /** Global, with match indices (the secret group's position). */
  pattern: RegExp;
  startsWord: boolean;
  keywords: readonly string[];
  entropy: number | undefined;
  secretGroup: number;
  allow: readonly RegExp[];
}

/** Parses and checks a rules file; throws an error that names the file and the rule at fault. */
export function parseSecretRules(text: string, source: string): SecretRule[] {
  const { fragments, rules } = parseDataFile(text, source, fileSchema);
  const seen = new Set<string>();
  return rules.map((rule) => {
    const where = `${source}: rule ${rule.id}`;
    if (seen.has(rule.id)) throw new ConfigError(`${where}: the id is used twice`);
    seen.add(rule.id);
    const source_ = rule.regex.replace(/\{\{(\w+)\}\}/g, (_, name: string) => {
      const fragment = fragments[name];
      if (fragment === undefined) throw new ConfigError(`${where}: no fragment named {{${name}}}`);
      return fragment;
    });
    const pattern = compile(source_, `g${rule.ignoreCase ? 'i' : ''}d`, where);
    // A regex with an empty alternative matches '' and has every group: the count of its groups.
    const groups = new RegExp(`${source_}|`).exec('')!.length - 1;
    if (rule.secretGroup > groups) throw new ConfigError(`${where}: secretGroup ${rule.secretGroup} but the regex has ${groups} groups`);
    return {
      id: rule.id,
      description: rule.description,
      pattern,
      startsWord: rule.startsWord,
      keywords: rule.keywords,
      entropy: rule.entropy,
      secretGroup: rule.secretGroup,
      allow: rule.allow.map((allow) => compile(allow, '', `${where}: allow`)),
    };
  });
}

function compile(source: string, flags: string, where: string): RegExp {
  try {
    return new RegExp(source, flags);
  } catch (error) {
    throw new ConfigError(`${where}: invalid regex (${(error as Error).message})`);
  }
}

let shipped: SecretRule[] | undefined;

/** The rules shipped with MetaClaw, read and checked once. */
export function secretRules(): readonly SecretRule[] {
  shipped ??= parseSecretRules(readFileSync(RULES_FILE, 'utf8'), 'data/secret-rules.json');
  return shipped;
}
