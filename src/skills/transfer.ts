import { cpSync, existsSync, readdirSync, readFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { redactSecrets } from '../text/index.js';
import { normaliseName } from './evolution/apply.js';
import { skillInjectionReason } from './screen.js';
import { categorySchema, parseLegacyFrontmatter, parseSkillFile, sameSkillContent } from './skill-file.js';
import type { SkillsService } from './service.js';
import { makeFolders } from '../shared/make-folders.js';

/** The starter bank shipped with MetaClaw-TS (our own texts). */
export const STARTER_DIR = fileURLToPath(new URL('../../skills-starter/', import.meta.url));

export interface ImportReport {
  imported: string[];
  /** Skills whose SKILL.md already says what the library's version does: no new version (see sameSkillContent). */
  unchanged: string[];
  skipped: Array<{ path: string; reason: string }>;
  /** Skills whose text reads like prompt injection: refused, or imported anyway with `force`. */
  suspicious: Array<{ name: string; path: string; reason: string; imported: boolean }>;
  generation: number | undefined;
}

/** Installs the starter bank; skills already in the library are kept unless `force`. */
export function installStarterSkills(service: SkillsService, options: { force?: boolean } = {}): ImportReport {
  return importSkills(service, STARTER_DIR, { overwrite: options.force ?? false, origin: 'starter', action: 'install' });
}

/**
 * Imports a folder of `<name>/SKILL.md` skills: MetaClaw's `memory_data/skills`, a Claude Code
 * `.claude/skills` folder, another MetaClaw-TS library. MetaClaw's line-based frontmatter (which is
 * not always valid YAML) is read with MetaClaw's own rule and rewritten as YAML. Every file that is
 * not imported is reported with the reason. A skill whose text reads like prompt injection is
 * refused unless `force` (its text is escaped when injected either way). The whole import counts as
 * one library generation.
 */
export function importSkills(
  service: SkillsService,
  folder: string,
  options: { overwrite?: boolean; force?: boolean; origin?: 'imported' | 'starter'; action?: 'import' | 'install' } = {},
): ImportReport {
  const report: ImportReport = { imported: [], unchanged: [], skipped: [], suspicious: [], generation: undefined };
  if (!existsSync(folder)) {
    report.skipped.push({ path: folder, reason: 'folder not found' });
    return report;
  }
  const candidates = readdirSync(folder, { withFileTypes: true }).filter((entry) => entry.isDirectory() && !entry.name.startsWith('.'));
  for (const entry of candidates) {
    const path = join(folder, entry.name, 'SKILL.md');
    if (!existsSync(path)) {
      report.skipped.push({ path: join(folder, entry.name), reason: 'no SKILL.md in this folder' });
      continue;
    }
    const text = readFileSync(path, 'utf8');
    const draft = readDraft(text, path, entry.name);
    if ('reason' in draft) {
      report.skipped.push({ path, reason: draft.reason });
      continue;
    }
    // An imported skill is injected into prompts: a key pasted into its text must not travel with it.
    const redacted = { ...draft, description: redactSecrets(draft.description), body: redactSecrets(draft.body) };
    const current = service.library.get(draft.name);
    if (current && sameSkillContent(current, redacted)) {
      // The same text again (an import re-run, install-starter over untouched starters) is no change:
      // counted, not refused, and a new version would fill the history with copies and bump the generation for nothing.
      if (options.overwrite) copySupportingFiles(join(folder, entry.name), join(service.library.dir, draft.name));
      report.unchanged.push(draft.name);
      continue;
    }
    if (current && !options.overwrite) {
      // Each command names its own flag: install-starter calls it --force, import --overwrite.
      const flag = options.action === 'install' ? '--force' : '--overwrite';
      report.skipped.push({ path, reason: `a skill named ${draft.name} already exists (use ${flag} to replace it)` });
      continue;
    }
    const injection = skillInjectionReason(draft);
    if (injection && !options.force) {
      report.suspicious.push({ name: draft.name, path, reason: injection, imported: false });
      continue;
    }
    report.generation ??= service.history.bumpGeneration();
    try {
      service.applyDraft({ ...redacted, origin: options.origin ?? 'imported' }, options.action ?? 'import', `import from ${folder}`, report.generation);
      copySupportingFiles(join(folder, entry.name), join(service.library.dir, draft.name));
      report.imported.push(draft.name);
      if (injection) report.suspicious.push({ name: draft.name, path, reason: injection, imported: true });
    } catch (error) {
      report.skipped.push({ path, reason: (error as Error).message });
    }
  }
  return report;
}

/** Copies every skill folder (SKILL.md and any scripts or references beside it) to `folder`. */
export function exportSkills(service: SkillsService, folder: string): string[] {
  makeFolders(folder);
  const exported: string[] = [];
  for (const skill of service.library.all()) {
    cpSync(join(service.library.dir, skill.name), join(folder, skill.name), { recursive: true });
    exported.push(skill.name);
  }
  return exported.sort();
}

type DraftOrReason = { name: string; description: string; category: string; body: string; extra: Record<string, unknown> } | { reason: string };

function readDraft(text: string, path: string, folderName: string): DraftOrReason {
  const parsed = parseSkillFile(text, path, folderName);
  if ('skill' in parsed) {
    const { skill } = parsed;
    return { name: skill.name, description: skill.description, category: skill.category, body: skill.body, extra: skill.extra };
  }
  // Not valid as it stands: try MetaClaw's line-based frontmatter, and a folder name that needs normalising.
  const legacy = parseLegacyFrontmatter(text);
  if (!legacy) return { reason: parsed.reason };
  const name = normaliseName(legacy.name ?? folderName);
  if (!name) return { reason: `no usable name (${parsed.reason})` };
  if (!legacy.description) return { reason: 'no description: a skill must say when to use it' };
  if (!legacy.body) return { reason: 'the body is empty' };
  if (legacy.description.length > 1024) return { reason: 'description longer than 1024 characters' };
  const category = legacy.category === undefined ? undefined : categorySchema.safeParse(legacy.category);
  if (category && !category.success) return { reason: `category: ${category.error.issues[0]!.message}` };
  return { name, description: legacy.description, category: legacy.category ?? 'general', body: legacy.body, extra: {} };
}

function copySupportingFiles(from: string, to: string): void {
  for (const entry of readdirSync(from, { withFileTypes: true })) {
    if (entry.name === 'SKILL.md' || basename(entry.name).startsWith('.')) continue;
    cpSync(join(from, entry.name), join(to, entry.name), { recursive: true });
  }
}
