import { readFileSync } from 'node:fs';
import { InternalError } from '../errors.js';

/**
 * Prompts are data files in `prompts/` (versioned, reviewed like code), not string literals.
 * Format: a `version: N` line, then `## system` and `## user` sections with {{placeholders}}.
 */
export interface Prompt {
  name: string;
  version: number;
  system: string;
  user: string;
}

const cache = new Map<string, Prompt>();

export function loadPrompt(name: string): Prompt {
  const cached = cache.get(name);
  if (cached) return cached;
  const text = readFileSync(new URL(`../../prompts/${name}.md`, import.meta.url), 'utf8');
  const version = Number(/^version:\s*(\d+)/m.exec(text)?.[1] ?? '1');
  const system = section(text, 'system');
  const user = section(text, 'user');
  const prompt = { name, version, system, user };
  cache.set(name, prompt);
  return prompt;
}

/** Replaces {{name}} placeholders; a missing value is an error, not a silent blank. */
export function fillPrompt(template: string, values: Readonly<Record<string, string>>): string {
  return template.replace(/\{\{(\w+)\}\}/g, (_, key: string) => {
    const value = values[key];
    if (value === undefined) throw new InternalError(`prompt placeholder {{${key}}} has no value`);
    return value;
  });
}

function section(text: string, heading: string): string {
  const match = new RegExp(`^## ${heading}\\s*\\n([\\s\\S]*?)(?=^## |(?![\\s\\S]))`, 'm').exec(text);
  if (!match) throw new InternalError(`prompt is missing its "## ${heading}" section`);
  return match[1]!.trim();
}
