import { existsSync } from 'node:fs';
import { join } from 'node:path';
import {
  CONFIG_SCHEMA_FILE,
  configJsonSchema,
  definitionFor,
  displayValue,
  KEY_DEFINITIONS,
  metaclawHome,
  noEffectWarning,
  setConfigValue,
  unsetConfigValue,
  writeConfigSchema,
  type KeyDefinition,
} from '../config/index.js';
import { ConfigError } from '../errors.js';
import { CliExit, loadCliConfig, print, printError } from './context.js';

export interface ConfigOptions {
  config?: string;
  json?: boolean;
  reveal?: boolean;
}

/**
 * `metaclaw config show | get KEY | set KEY VALUE | unset KEY | keys | path | schema`, and MetaClaw's
 * `metaclaw config KEY [VALUE]`. Values are converted by each key's type, never guessed.
 */
export function configCommand(args: string[], options: ConfigOptions): void {
  const [first, ...rest] = args;
  // A word more than the subcommand takes was dropped before: `config set llm.model_id my model`
  // set "my". Refused instead, with the usage, so a value with spaces gets its quotes.
  const atMost = (count: number, usage: string) => {
    if (rest.length > count) throw new CliExit(`Usage: metaclaw ${usage}  (${rest.length - count} word(s) too many; quote a value that has spaces)`);
  };
  try {
    switch (first) {
      case undefined:
      case 'show':
        atMost(0, 'config show');
        return show(options);
      case 'path':
        atMost(0, 'config path');
        return print(loadCliConfig(pick(options)).file);
      case 'keys':
        atMost(0, 'config keys');
        return keys(options);
      case 'schema':
        atMost(0, 'config schema');
        return print(JSON.stringify(configJsonSchema(), null, 2));
      case 'get':
        atMost(1, 'config get KEY');
        return get(required(rest[0], 'config get KEY'), options);
      case 'set':
        atMost(2, 'config set KEY VALUE');
        return set(required(rest[0], 'config set KEY VALUE'), required(rest[1], 'config set KEY VALUE'), options);
      case 'unset':
        atMost(1, 'config unset KEY');
        return unset(required(rest[0], 'config unset KEY'), options);
      default:
        atMost(1, 'config KEY [VALUE]');
        if (rest.length === 0) return get(first, options);
        return set(first, rest[0]!, options);
    }
  } catch (error) {
    if (error instanceof ConfigError) throw new CliExit(error.message);
    throw error;
  }
}

function show(options: ConfigOptions): void {
  const config = loadCliConfig(pick(options));
  const values = config.values as unknown as Record<string, unknown>;
  if (options.json) {
    const masked = Object.fromEntries(KEY_DEFINITIONS.map((definition) => [definition.key, maskIf(definition, values[definition.key], options.reveal)]));
    print(JSON.stringify({ file: config.file, exists: config.fileExists, values: masked, warnings: config.warnings }, null, 2));
    return;
  }
  print(`# ${config.file}${config.fileExists ? '' : ' (not created yet: showing defaults)'}`);
  for (const warning of config.warnings) print(`# warning: ${warning}`);
  let section = '';
  for (const definition of KEY_DEFINITIONS) {
    const top = definition.key.includes('.') ? definition.key.split('.')[0]! : '';
    if (top !== section) {
      section = top;
      print('');
    }
    const marker = config.explicitKeys.has(definition.key) ? ' ' : '·';
    print(`${marker} ${definition.key} = ${render(definition, values[definition.key], options.reveal)}`);
  }
  print('');
  print('(· = default value; secrets are masked, --reveal shows them)');
}

function keys(options: ConfigOptions): void {
  if (options.json) {
    print(
      JSON.stringify(
        KEY_DEFINITIONS.map((definition) => ({
          key: definition.key,
          type: definition.expected,
          default: definition.secret ? '' : definition.default,
          doc: definition.doc,
          secret: definition.secret === true,
          status: definition.noEffect?.status ?? 'honoured',
          ...(definition.noEffect ? { reason: definition.noEffect.reason } : {}),
        })),
        null,
        2,
      ),
    );
    return;
  }
  for (const definition of KEY_DEFINITIONS) {
    print(
      `${definition.key}  (${definition.expected}; default ${definition.secret ? '(empty)' : JSON.stringify(definition.default)})${definition.noEffect ? `  [${STATUS_LABELS[definition.noEffect.status]}]` : ''}`,
    );
    print(`    ${definition.doc}`);
    if (definition.noEffect) print(`    No effect in MetaClaw-TS: ${definition.noEffect.reason}. Setting it warns at start.`);
  }
  print('');
  print('[compatibility only] MetaClaw keys accepted so its config files load, with the reason they do nothing here.');
}

const STATUS_LABELS = { compatibility: 'compatibility only', planned: 'not built yet' } as const;

function get(key: string, options: ConfigOptions): void {
  const definition = definitionFor(key);
  const config = loadCliConfig(pick(options));
  const value = (config.values as unknown as Record<string, unknown>)[definition.key];
  if (options.json) print(JSON.stringify(maskIf(definition, value, options.reveal)));
  else print(`${definition.key}: ${render(definition, value, options.reveal)}`);
}

function set(key: string, text: string, options: ConfigOptions): void {
  const config = loadCliConfig(pick(options));
  // The schema is written once the value is accepted: a refused set leaves the home as it was.
  const { key: canonical, value } = setConfigValue(config.file, key, text, { schemaFile: join(config.home, CONFIG_SCHEMA_FILE) });
  writeConfigSchema(config.home);
  const definition = definitionFor(canonical);
  // A key with no effect in MetaClaw-TS is not one a restart applies: its warning below says so.
  const apply = definition.noEffect ? '' : '; restart the proxy to apply';
  print(`${canonical} = ${render(definition, value, false)}  (written to ${config.file}${apply})`);
  const ignored = noEffectWarning(definition, value);
  if (ignored) printError(`warning: ${ignored}`);
}

function unset(key: string, options: ConfigOptions): void {
  // Unset is how a file that does not load (a bad value, a typo'd key) gets repaired: it needs the
  // file's path, not its values, so the file is not loaded first.
  const file = configFilePath(options);
  const { key: canonical, removed, unknown } = unsetConfigValue(file, key);
  if (unknown) print(`${canonical} removed from ${file}; MetaClaw does not know this key${unknown.hint ? ` (did you mean "${unknown.hint}"?)` : ''}.`);
  else print(removed ? `${canonical} removed from ${file}; its default applies.` : `${canonical} was not set in ${file}.`);
}

/** The file `loadConfig` would read: `--config PATH` (which must exist) or $METACLAW_HOME/config.yaml. */
function configFilePath(options: ConfigOptions): string {
  if (!options.config) return join(metaclawHome(), 'config.yaml');
  if (!existsSync(options.config)) throw new CliExit(`Config file not found: ${options.config}`);
  return options.config;
}

function render(definition: KeyDefinition, value: unknown, reveal: boolean | undefined): string {
  if ((definition.secret || definition.redact) && !reveal) return displayValue(definition, value);
  if (typeof value === 'string') return value === '' ? '""' : value;
  return JSON.stringify(value);
}

function maskIf(definition: KeyDefinition, value: unknown, reveal: boolean | undefined): unknown {
  if (reveal) return value;
  if (definition.redact) return definition.redact(value);
  return definition.secret ? displayValue(definition, value) : value;
}

function required(value: string | undefined, usage: string): string {
  if (value === undefined) throw new CliExit(`Usage: metaclaw ${usage}`);
  return value;
}

function pick(options: ConfigOptions): { config?: string } {
  return options.config ? { config: options.config } : {};
}
