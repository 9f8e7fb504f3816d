/**
 * Applies, reverts and checks MetaClaw's settings on any ConfigDocument, and double-checks every
 * edit: the edited text is parsed again and must hold exactly the data a plain-value model predicts.
 */
import { ClawError } from './types.js';
import { deepEqual, describePath, isEmptyContainer, readPath } from './document.js';
import type { ConfigDocument, DocumentFormat, KeyPath, Setting } from './document.js';
import { PlainDocument } from './tree-document.js';

/** Sets every setting whose value differs; returns whether anything changed. */
export function applySettings(document: ConfigDocument, settings: readonly Setting[]): boolean {
  let changed = false;
  for (const setting of settings) {
    if (deepEqual(readPath(document.value(), setting.path), setting.value)) continue;
    document.set(setting.path, setting.value);
    changed = true;
  }
  return changed;
}

/**
 * Puts every setting's path back to what `original` holds there (removing it, and any container it
 * alone left empty, when the original had none); everything else in `document` stays.
 */
export function revertSettings(document: ConfigDocument, original: ConfigDocument, settings: readonly Setting[]): boolean {
  let changed = false;
  for (const { path } of settings) {
    const before = readPath(original.value(), path);
    if (deepEqual(readPath(document.value(), path), before)) continue;
    if (before === undefined) {
      document.delete(path);
      pruneEmptyParents(document, original, path);
    } else {
      document.restore(path, original);
    }
    changed = true;
  }
  return changed;
}

function pruneEmptyParents(document: ConfigDocument, original: ConfigDocument, path: KeyPath): void {
  for (let depth = path.length - 1; depth > 0; depth -= 1) {
    const parent = path.slice(0, depth);
    if (!isEmptyContainer(readPath(document.value(), parent)) || readPath(original.value(), parent) !== undefined) return;
    document.delete(parent);
  }
}

/** What differs from the settings, one sentence each; secrets are never quoted. */
export function checkSettings(document: ConfigDocument, settings: readonly Setting[], source: string): string[] {
  const problems: string[] = [];
  for (const setting of settings) {
    const actual = readPath(document.value(), setting.path);
    if (deepEqual(actual, setting.value)) continue;
    const where = `\`${describePath(setting.path)}\` in ${source}`;
    if (actual === undefined) problems.push(`${where} is missing`);
    else if (isSecretPath(setting.path) || typeof setting.value === 'object') problems.push(`${where} is not what MetaClaw set`);
    else problems.push(`${where} is ${JSON.stringify(actual)}, expected ${JSON.stringify(setting.value)}`);
  }
  return problems;
}

function isSecretPath(path: KeyPath): boolean {
  const last = path[path.length - 1];
  // Header settings (Claude Code's ANTHROPIC_CUSTOM_HEADERS) carry MetaClaw's key too.
  return typeof last === 'string' && /key|token|secret|credential|header/i.test(last);
}

/**
 * Renders `document` and proves the text means what we intended: parsed again it must equal
 * `expected` (plain values). A mismatch means an editor bug; the file is then left alone.
 */
export function renderChecked(format: DocumentFormat, document: ConfigDocument, expected: unknown, source: string): string {
  const text = document.render();
  let reparsed: ConfigDocument;
  try {
    reparsed = format.parse(text, source);
  } catch (error) {
    throw editFailed(source, error);
  }
  if (!deepEqual(reparsed.value(), expected)) throw editFailed(source);
  return text;
}

/** The plain data `document` should hold once `settings` are applied. */
export function expectedAfterApply(document: ConfigDocument, settings: readonly Setting[]): unknown {
  const model = new PlainDocument(document.value());
  applySettings(model, settings);
  return model.value();
}

/** The plain data `document` should hold once `settings` are reverted to `original`. */
export function expectedAfterRevert(document: ConfigDocument, original: ConfigDocument, settings: readonly Setting[]): unknown {
  const model = new PlainDocument(document.value());
  revertSettings(model, new PlainDocument(original.value()), settings);
  return model.value();
}

function editFailed(source: string, cause?: unknown): ClawError {
  return new ClawError(
    'edit_failed',
    `MetaClaw could not edit ${source} without disturbing the rest of it, so it left the file unchanged. Please report this.`,
    {
      path: source,
      cause,
    },
  );
}
