import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { isAlias, isMap, isScalar, isSeq, LineCounter, parseDocument, type Document, type Node as YamlNode, type Pair } from 'yaml';
import { ConfigError } from '../errors.js';
import { checkValue, convertText, displayValue } from './convert.js';
import { DATABASE_URL_VARIABLE, maskDatabaseUrl } from './database-url.js';
import { dependencyWarnings, noEffectWarning } from './effect.js';
import { homeIsFileProblem, homePaths, metaclawHome, resolveConfiguredPath, type HomePaths } from './home.js';
import { nearest } from './nearest.js';
import { DEFINITIONS_BY_KEY, KEY_ALIASES, KEY_DEFINITIONS, SECTIONS, VALUE_ALIASES, type ConfigKey, type ConfigValues } from './schema.js';
import type { KeyDefinition } from './types.js';

export interface ConfigPaths extends HomePaths {
  skillsDir: string;
  memoryDir: string;
}

export interface LoadedConfig {
  readonly values: ConfigValues;
  readonly home: string;
  readonly paths: ConfigPaths;
  /** The config file read (or that would be read). */
  readonly file: string;
  readonly fileExists: boolean;
  /** Keys whose value came from the file or an override rather than the default. */
  readonly explicitKeys: ReadonlySet<string>;
  /** The keys the config file itself sets (not the command line's overrides): what privacy.ts counts. */
  readonly fileKeys: ReadonlySet<string>;
  readonly warnings: readonly string[];
}

export interface LoadOptions {
  env?: NodeJS.ProcessEnv;
  /** `--config PATH`: must exist. */
  configFile?: string;
  /** `--port 4000` style overrides for this run only, as text converted by each key's type. */
  overrides?: Readonly<Record<string, string | undefined>>;
}

/** Environment variable that sets `proxy.api_key` (over the config file). */
export const PROXY_KEY_VARIABLE = 'METACLAW_PROXY_API_KEY';

/** Loads `config.yaml` over the embedded defaults. Any invalid value stops here with a precise message. */
export function loadConfig(options: LoadOptions = {}): LoadedConfig {
  const env = options.env ?? process.env;
  const home = metaclawHome(env);
  const notAFolder = homeIsFileProblem(home);
  if (notAFolder) throw new ConfigError(notAFolder);
  const file = options.configFile ?? join(home, 'config.yaml');
  const fileExists = existsSync(file);
  if (options.configFile && !fileExists) throw new ConfigError(`Config file not found: ${options.configFile}`);

  const values = new Map<string, unknown>(KEY_DEFINITIONS.map((definition) => [definition.key, definition.default]));
  const explicitKeys = new Set<string>();
  const warnings: string[] = [];
  const errors: string[] = [];

  if (fileExists) {
    readYaml(readConfigText(file), file, { values, explicitKeys, warnings, errors });
  }
  // The errors past these are the command line's and the environment's, not the file's.
  const fileErrors = errors.length;
  const fileKeys = new Set(explicitKeys);

  for (const [key, text] of Object.entries(options.overrides ?? {})) {
    if (text === undefined) continue;
    const definition = DEFINITIONS_BY_KEY.get(key);
    if (!definition) throw new ConfigError(`Unknown override key ${key}`);
    const converted = convertText(definition, text);
    const checked = 'error' in converted ? converted : checkValue(definition, applyValueAlias(key, converted.value));
    if ('error' in checked)
      errors.push(`command line: ${key} = ${definition.secret ? displayValue(definition, text) : JSON.stringify(text)}: ${checked.error}`);
    else {
      values.set(key, checked.value);
      explicitKeys.add(key);
      const ignored = noEffectWarning(definition, checked.value);
      if (ignored) warnings.push(`command line: ${ignored}`);
    }
  }

  // The proxy's own key may come from the environment, so it never has to be typed on a command line.
  const proxyKey = env[PROXY_KEY_VARIABLE]?.trim();
  if (proxyKey) values.set('proxy.api_key', proxyKey);
  // The team store's URL (and its password) likewise; a `--store` given for this run wins over it.
  // Not an explicit key: the file does not hold it (see privacy.ts).
  const databaseUrl = env[DATABASE_URL_VARIABLE]?.trim();
  if (databaseUrl && options.overrides?.['store.url'] === undefined) {
    const checked = checkValue(DEFINITIONS_BY_KEY.get('store.url')!, databaseUrl);
    if ('error' in checked) errors.push(`${DATABASE_URL_VARIABLE} = ${JSON.stringify(maskDatabaseUrl(databaseUrl))}: ${checked.error}`);
    else values.set('store.url', checked.value);
  }

  if (errors.length > 0) {
    // `start --port 99999` with no config file read "Invalid configuration in …/config.yaml".
    const where = fileErrors > 0 ? ` in ${file}` : '';
    throw new ConfigError(`Invalid configuration${where}:\n${errors.map((line) => `  - ${line}`).join('\n')}`);
  }
  const typed = Object.fromEntries(values) as ConfigValues;
  for (const warning of dependencyWarnings(typed, explicitKeys)) warnings.push(`${file}: ${warning}`);
  return { values: typed, home, paths: configPaths(home, typed), file, fileExists, explicitKeys, fileKeys, warnings };
}

/**
 * The embedded defaults alone, for $METACLAW_HOME, the config file not read: what `uninstall` falls
 * back on when config.yaml does not load, since what it removes lies in the home folder whatever the
 * file says.
 */
export function defaultConfig(env: NodeJS.ProcessEnv = process.env): LoadedConfig {
  const home = metaclawHome(env);
  const values = Object.fromEntries(KEY_DEFINITIONS.map((definition) => [definition.key, definition.default])) as ConfigValues;
  const file = join(home, 'config.yaml');
  return { values, home, paths: configPaths(home, values), file, fileExists: existsSync(file), explicitKeys: new Set(), fileKeys: new Set(), warnings: [] };
}

function configPaths(home: string, values: ConfigValues): ConfigPaths {
  return {
    ...homePaths(home),
    skillsDir: resolveConfiguredPath(home, values['skills.dir'], 'skills'),
    // MetaClaw's memory folder: memories live in the database here, but uninstall still clears it.
    memoryDir: join(home, 'memory'),
  };
}

interface Collector {
  values: Map<string, unknown>;
  explicitKeys: Set<string>;
  warnings: string[];
  errors: string[];
}

function readYaml(text: string, file: string, collector: Collector): void {
  const lineCounter = new LineCounter();
  // `merge`: `<<: *defaults` merges a mapping, as PyYAML (MetaClaw's loader) does.
  const document = parseDocument(text, { lineCounter, uniqueKeys: true, merge: true });
  if (document.errors.length > 0) {
    const details = document.errors.map((error) => {
      const position = error.linePos?.[0];
      const where = position ? `line ${position.line}, column ${position.col}` : 'unknown position';
      return `  - ${where}: ${error.message.split('\n')[0]}`;
    });
    throw new ConfigError(`${file} is not valid YAML:\n${details.join('\n')}`);
  }
  const root = resolveAlias(document, document.contents);
  if (root === null || (isScalar(root) && (root.value === null || root.value === ''))) return;
  if (!isMap(root)) throw new ConfigError(`${file}: the top level must be a mapping of keys (like "proxy:"), found ${describeNode(root)}.`);

  const where = (node: YamlNode | null | undefined): string => {
    const offset = node?.range?.[0];
    if (offset === undefined) return file;
    return `${file}:${lineCounter.linePos(offset).line}`;
  };
  walkMapping(root, '', { ...collector, document, where });
}

interface Walk extends Collector {
  document: Document;
  where: (node: YamlNode | null | undefined) => string;
}

/** An alias (`*defaults`) stands for the node its anchor names; anything else for itself. */
function resolveAlias(document: Document, node: unknown): YamlNode | null {
  if (isAlias(node)) return (node.resolve(document) as YamlNode | undefined) ?? null;
  return (node as YamlNode | null) ?? null;
}

/**
 * The mapping's own pairs, then those `<<: *anchor` (or `<<: [*a, *b]`) merges in for keys it does
 * not set itself, the first merged mapping winning, as YAML's merge key says.
 */
function effectivePairs(document: Document, mapping: YamlNode, merging = new Set<YamlNode>()): Pair[] {
  // A mapping that merges itself (`a: &a {<<: *a}`) adds nothing the second time round.
  if (!isMap(mapping) || merging.has(mapping)) return [];
  merging.add(mapping);
  const isMerge = (pair: Pair) => isScalar(pair.key) && typeof pair.key.value === 'symbol';
  const keyOf = (pair: Pair) => (isScalar(pair.key) ? String(pair.key.value) : String(pair.key));
  const own = mapping.items.filter((pair) => !isMerge(pair));
  const seen = new Set(own.map(keyOf));
  const merged: Pair[] = [];
  for (const pair of mapping.items.filter(isMerge)) {
    const value = resolveAlias(document, pair.value);
    const sources = isSeq(value) ? value.items.map((item) => resolveAlias(document, item)) : [value];
    for (const source of sources) {
      for (const inner of effectivePairs(document, source as YamlNode, merging)) {
        if (seen.has(keyOf(inner))) continue;
        seen.add(keyOf(inner));
        merged.push(inner);
      }
    }
  }
  return [...own, ...merged];
}

function walkMapping(mapping: YamlNode, prefix: string, collector: Walk): void {
  const { where } = collector;
  for (const pair of effectivePairs(collector.document, mapping)) {
    const keyNode = pair.key as YamlNode | null;
    const rawKey = isScalar(keyNode) ? String(keyNode.value) : String(keyNode);
    const path = prefix === '' ? rawKey : `${prefix}.${rawKey}`;
    const valueNode = resolveAlias(collector.document, pair.value);
    const canonical = KEY_ALIASES[path] ?? path;
    const definition = DEFINITIONS_BY_KEY.get(canonical);

    if (definition) {
      readLeaf(definition, path, valueNode, collector, where(valueNode ?? keyNode));
      continue;
    }
    if (SECTIONS.has(canonical)) {
      if (valueNode === null || (isScalar(valueNode) && valueNode.value === null)) continue;
      if (!isMap(valueNode)) {
        collector.errors.push(`${where(valueNode)}: ${path} = ${describeNode(valueNode)}: expected a mapping of keys under "${path}:"`);
        continue;
      }
      walkMapping(valueNode, path, collector);
      continue;
    }
    if (path === 'configure_openclaw') {
      const value = isScalar(valueNode) ? valueNode.value : undefined;
      if (value === false && !collector.explicitKeys.has('claw_type')) collector.values.set('claw_type', 'none');
      collector.warnings.push(`${where(keyNode)}: configure_openclaw is MetaClaw's legacy key; use claw_type (false means claw_type: none).`);
      continue;
    }
    const siblings = [...DEFINITIONS_BY_KEY.keys(), ...SECTIONS];
    const hint = nearest(path, siblings);
    collector.warnings.push(`${where(keyNode)}: unknown key "${path}" is ignored${hint ? `; did you mean "${hint}"?` : ''}`);
  }
}

function readLeaf(definition: KeyDefinition, path: string, node: YamlNode | null, collector: Walk, location: string): void {
  let raw: unknown;
  if (node === null || node === undefined) raw = null;
  else if (isScalar(node)) {
    raw = node.value;
    // A plain scalar like `api_key: 0123` must keep its text, not become the number 123.
    if (isTextKind(definition) && raw !== null && typeof raw !== 'string')
      raw = node.source ?? (typeof raw === 'number' || typeof raw === 'boolean' || typeof raw === 'bigint' ? String(raw) : JSON.stringify(raw));
  } else {
    try {
      // The document resolves aliases inside the value; its alias budget refuses a "billion laughs" bomb.
      raw = node.toJS(collector.document, { maxAliasCount: MAX_ALIAS_EXPANSIONS });
    } catch (error) {
      collector.errors.push(`${location}: ${path}: ${(error as Error).message.split('\n')[0]}`);
      return;
    }
  }

  if (raw === null) {
    if (isTextKind(definition)) raw = '';
    else {
      collector.errors.push(
        `${location}: ${path} is empty: expected ${definition.expected} (remove the line to use the default ${JSON.stringify(definition.default)})`,
      );
      return;
    }
  }
  if (typeof raw === 'string' && !isTextKind(definition) && definition.kind !== 'list') {
    const converted = convertText(definition, raw);
    if ('error' in converted) {
      collector.errors.push(`${location}: ${path} = ${displayValue(definition, raw)}: ${converted.error}`);
      return;
    }
    raw = converted.value;
  }
  const checked = checkValue(definition, applyValueAlias(definition.key, raw));
  if ('error' in checked) {
    collector.errors.push(`${location}: ${path} = ${displayValue(definition, raw)}: ${checked.error}`);
    return;
  }
  if (path !== definition.key) {
    if (collector.explicitKeys.has(definition.key)) return; // the new name wins over the legacy alias
    collector.warnings.push(`${location}: ${path} is MetaClaw's legacy name for ${definition.key}; it still works.`);
  }
  collector.values.set(definition.key, checked.value);
  collector.explicitKeys.add(definition.key);
  const ignored = noEffectWarning(definition, checked.value);
  if (ignored) collector.warnings.push(`${location}: ${ignored}`);
}

/** How many alias expansions one value may make: plenty for a fallbacks list that reuses an entry. */
const MAX_ALIAS_EXPANSIONS = 100;

function isTextKind(definition: KeyDefinition): boolean {
  return definition.kind === 'string' || definition.kind === 'secret' || definition.kind === 'path';
}

function applyValueAlias(key: string, value: unknown): unknown {
  if (typeof value !== 'string') return value;
  return VALUE_ALIASES[key]?.[value] ?? value;
}

function describeNode(node: YamlNode | null): string {
  if (node === null) return 'nothing';
  if (isScalar(node)) return JSON.stringify(node.value);
  if (isMap(node)) return 'a mapping';
  return 'a list';
}

export function isConfigKey(key: string): key is ConfigKey {
  return DEFINITIONS_BY_KEY.has(key);
}

/**
 * The config file's text; a file that exists but cannot be read (a folder, no permission) is a
 * ConfigError naming it, so every command says so cleanly instead of ending in a stack trace.
 */
export function readConfigText(file: string): string {
  let bytes: Buffer;
  try {
    bytes = readFileSync(file);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const why = code === 'EISDIR' ? 'it is a folder, not a file' : code === 'EACCES' ? 'permission denied' : (error as Error).message;
    throw new ConfigError(`Cannot read the config file ${file}: ${why}.`);
  }
  try {
    return UTF8.decode(bytes);
  } catch {
    // Decoding would turn the bad bytes into U+FFFD inside a key or model name, silently.
    throw new ConfigError(`${file}:${firstNonUtf8Line(bytes)}: the file is not UTF-8 text; save it as UTF-8.`);
  }
}

const UTF8 = new TextDecoder('utf-8', { fatal: true });

function firstNonUtf8Line(bytes: Buffer): number {
  let start = 0;
  for (let line = 1; ; line++) {
    const end = bytes.indexOf(0x0a, start);
    try {
      UTF8.decode(bytes.subarray(start, end === -1 ? bytes.length : end));
    } catch {
      return line;
    }
    if (end === -1) return line;
    start = end + 1;
  }
}
