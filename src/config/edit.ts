import { existsSync, statSync } from 'node:fs';
import { isAlias, isMap, parseDocument, YAMLMap, type Document } from 'yaml';
import { ConfigError } from '../errors.js';
import { writeFileAtomic } from '../shared/atomic-write.js';
import { LockBusyError, withFileLock } from '../shared/file-lock.js';
import { isReadOnly } from '../shared/read-only.js';
import { symlinkTarget } from '../shared/symlink-target.js';
import { checkValue, convertText, displayValue } from './convert.js';
import { schemaModeline } from './json-schema.js';
import { readConfigText } from './load.js';
import { nearest } from './nearest.js';
import { DEFINITIONS_BY_KEY, KEY_ALIASES, SECTIONS, VALUE_ALIASES } from './schema.js';
import type { KeyDefinition } from './types.js';

/** The config file holds API keys: only its owner may read it. */
export const CONFIG_FILE_MODE = 0o600;

export function definitionFor(key: string): KeyDefinition {
  const canonical = KEY_ALIASES[key] ?? key;
  const definition = DEFINITIONS_BY_KEY.get(canonical);
  if (!definition) throw unknownKeyError(key);
  return definition;
}

function unknownKeyError(key: string): ConfigError {
  const inside = sectionKeys(key);
  // `config get llm` read "Unknown config key" while `config unset llm` said it is a section.
  if (inside.length > 0)
    return new ConfigError(`"${key}" is a section of keys, not a key: name one of its keys, such as "${inside[0]}" (see \`metaclaw config keys\`).`);
  const hint = nearest(key, DEFINITIONS_BY_KEY.keys());
  return new ConfigError(`Unknown config key "${key}"${hint ? `; did you mean "${hint}"?` : ''} (see \`metaclaw config keys\`).`);
}

/** The keys inside `key` when it names a section (`llm`, `skills.embedding`), else none. */
function sectionKeys(key: string): string[] {
  return [...DEFINITIONS_BY_KEY.keys()].filter((known) => known.startsWith(`${key}.`));
}

/** Parses command-line text into the key's typed value, or explains what was expected. */
export function parseValueForKey(key: string, text: string): { definition: KeyDefinition; value: unknown } {
  const definition = definitionFor(key);
  const converted = convertText(definition, text);
  // A refused secret is not echoed back in clear (a database URL carries its password), nor one
  // inside a value (a fallback's api_key): text that is not even JSON is not shown at all.
  const shown = definition.secret
    ? displayValue(definition, text)
    : definition.redact
      ? 'value' in converted
        ? displayValue(definition, converted.value)
        : '(not shown)'
      : JSON.stringify(text);
  if ('error' in converted) throw new ConfigError(`${definition.key} = ${shown}: ${converted.error}.`);
  const aliased = typeof converted.value === 'string' ? (VALUE_ALIASES[definition.key]?.[converted.value] ?? converted.value) : converted.value;
  const checked = checkValue(definition, aliased);
  if ('error' in checked) throw new ConfigError(`${definition.key} = ${shown}: ${checked.error}.`);
  return { definition, value: checked.value };
}

/** `schemaFile`: a file this creates starts with the comment that points YAML editors at the config's JSON Schema. */
export interface WriteOptions {
  schemaFile?: string;
}

/**
 * Sets one key in the file, keeping comments, ordering and sections this tool does not know.
 * Written atomically with mode 0600.
 */
export function setConfigValue(file: string, key: string, text: string, options: WriteOptions = {}): { key: string; value: unknown } {
  const { definition, value } = parseValueForKey(key, text);
  editDocument(file, options, (document) => {
    for (const [legacy, canonical] of Object.entries(KEY_ALIASES)) {
      if (canonical === definition.key && document.hasIn(legacy.split('.'))) document.deleteIn(legacy.split('.'));
    }
    assertNoAlias(file, document, definition.key);
    document.setIn(definition.key.split('.'), value);
    return true;
  });
  return { key: definition.key, value };
}

/** Removes a key from the file so that its default applies again. */
export function unsetConfigValue(file: string, key: string): { key: string; removed: boolean; unknown?: { hint?: string } } {
  const canonical = KEY_ALIASES[key] ?? key;
  if (!DEFINITIONS_BY_KEY.has(canonical)) return unsetUnknownKey(file, key);
  const definition = definitionFor(key);
  if (!existsSync(file)) return { key: definition.key, removed: false };
  let removed = false;
  editDocument(file, {}, (document) => {
    // The key may be written under MetaClaw's legacy name (rl.tinker_api_key), which loads as it: both go.
    const names = [definition.key, ...Object.keys(KEY_ALIASES).filter((legacy) => KEY_ALIASES[legacy] === definition.key)];
    for (const name of names) assertNoAlias(file, document, name);
    const paths = names.map((name) => name.split('.')).filter((path) => document.hasIn(path));
    for (const path of paths) {
      document.deleteIn(path);
      pruneEmptySections(document, path.slice(0, -1));
    }
    removed = paths.length > 0;
    return removed;
  });
  return { key: definition.key, removed };
}

/**
 * A key the schema does not know (a typo such as `proxy.prot`) is removed when the file holds it:
 * the loader only warns about it, and `unset` is how the warning goes away. One the file does not
 * hold is refused as unknown, as before, and a section (`proxy`) is never removed wholesale.
 */
function unsetUnknownKey(file: string, key: string): { key: string; removed: boolean; unknown: { hint?: string } } {
  if (SECTIONS.has(key) || sectionKeys(key).length > 0)
    throw new ConfigError(`"${key}" is a section of keys, not a key: unset its keys one by one (see \`metaclaw config keys\`).`);
  const path = key.split('.');
  if (!existsSync(file) || key.trim() === '') throw unknownKeyError(key);
  editDocument(file, {}, (document) => {
    if (!document.hasIn(path)) throw unknownKeyError(key);
    document.deleteIn(path);
    pruneEmptySections(document, path.slice(0, -1));
    return true;
  });
  const hint = nearest(key, DEFINITIONS_BY_KEY.keys());
  return { key, removed: true, unknown: hint ? { hint } : {} };
}

/** Applies several values at once (used by `metaclaw setup`), keeping everything else in the file. */
export function updateConfigFile(file: string, updates: Readonly<Record<string, unknown>>, options: WriteOptions = {}): void {
  editDocument(file, options, (document) => {
    for (const [key, value] of Object.entries(updates)) {
      const definition = definitionFor(key);
      const checked = checkValue(definition, value);
      if ('error' in checked) throw new ConfigError(`${definition.key} = ${displayValue(definition, value)}: ${checked.error}.`);
      assertNoAlias(file, document, definition.key);
      document.setIn(definition.key.split('.'), checked.value);
    }
    return true;
  });
}

/**
 * Reads, changes and writes the file under a lock, so that two `config set` at once both land.
 * A symlinked config is written through (the link stays), and a file its owner made read-only is
 * refused, not replaced. `change` returns whether there is anything to write.
 */
function editDocument(file: string, options: WriteOptions, change: (document: Document) => boolean): void {
  const target = writableConfigPath(file);
  try {
    withFileLock(target, () => {
      const document = readDocument(target, options);
      if (change(document)) writeDocument(target, document);
    });
  } catch (error) {
    if (error instanceof LockBusyError)
      throw new ConfigError(`Another process is changing ${file} (${error.lockFile} is held); nothing was changed, try again.`);
    throw error;
  }
}

function writableConfigPath(file: string): string {
  const target = symlinkTarget(file);
  if (target === undefined) throw new ConfigError(`${file} is a symlink loop; nothing was changed.`);
  if (!existsSync(target)) return target;
  if (isReadOnly(target))
    throw new ConfigError(
      `${file} is read-only (mode 0${(statSync(target).mode & 0o777).toString(8)}); nothing was changed. Make it writable (chmod u+w) to change keys.`,
    );
  return target;
}

/** A section written as a YAML alias (`proxy: *defaults`) is shared with its anchor: it is edited by hand. */
function assertNoAlias(file: string, document: Document, key: string): void {
  const path = key.split('.');
  for (let depth = 1; depth <= path.length; depth++) {
    if (isAlias(document.getIn(path.slice(0, depth), true)))
      throw new ConfigError(`${file} writes ${path.slice(0, depth).join('.')} as a YAML alias; change ${key} there by hand (nothing was changed).`);
  }
}

function readDocument(file: string, options: WriteOptions = {}): Document {
  const text = existsSync(file) ? readConfigText(file) : '';
  const document: Document = parseDocument(text.trim() === '' ? '{}' : text);
  if (text.trim() === '') {
    // Start from an empty mapping written in block style, like a hand-written config.
    (document.contents as YAMLMap).flow = false;
    if (options.schemaFile) document.commentBefore = schemaModeline(file, options.schemaFile);
    return document;
  }
  if (document.errors.length > 0) {
    throw new ConfigError(`${file} is not valid YAML (${document.errors[0]!.message.split('\n')[0]}); fix it by hand before changing keys.`);
  }
  if (document.contents === null) document.contents = document.createNode({});
  if (!isMap(document.contents)) throw new ConfigError(`${file}: the top level must be a mapping of keys.`);
  return document;
}

function writeDocument(file: string, document: Document): void {
  writeFileAtomic(file, document.toString(), { mode: CONFIG_FILE_MODE });
}

function pruneEmptySections(document: Document, sectionPath: string[]): void {
  for (let depth = sectionPath.length; depth > 0; depth--) {
    const path = sectionPath.slice(0, depth);
    const section = document.getIn(path, true);
    if (isMap(section) && section.items.length === 0) document.deleteIn(path);
    else break;
  }
}
