import { existsSync, readFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { z } from 'zod';
import { writeFileAtomic } from '../shared/atomic-write.js';
import { makeFolders } from '../shared/make-folders.js';
import { DEFINITIONS_BY_KEY, KEY_ALIASES, KEY_DEFINITIONS, LEGACY_RULES, VALUE_ALIASES } from './schema.js';
import type { KeyDefinition } from './types.js';

type JsonSchema = Record<string, unknown>;

/** Beside config.yaml in `$METACLAW_HOME`, refreshed by `setup`, `config set` and `start`. */
export const CONFIG_SCHEMA_FILE = 'config.schema.json';

/**
 * The JSON Schema of `config.yaml` for editors (YAML language servers read draft-07), generated
 * from the key table: one nested object per dotted section, each key's type from its zod schema,
 * with its default, accepted values and doc. Unknown keys are flagged, as the loader warns of them.
 */
export function configJsonSchema(): JsonSchema {
  const root: JsonSchema = { $schema: 'http://json-schema.org/draft-07/schema#', title: 'MetaClaw-TS config.yaml', ...section() };
  for (const definition of KEY_DEFINITIONS) place(root, definition.key, keySchema(definition));
  for (const [legacy, canonical] of Object.entries(KEY_ALIASES)) {
    const definition = DEFINITIONS_BY_KEY.get(canonical)!;
    place(root, legacy, { ...keySchema(definition), description: `MetaClaw's legacy name for ${canonical}: ${definition.doc}`, deprecated: true });
  }
  for (const [legacy, rule] of Object.entries(LEGACY_RULES)) place(root, legacy, { description: `MetaClaw's legacy key: ${rule}.`, deprecated: true });
  return root;
}

/** Writes the schema to `$METACLAW_HOME/config.schema.json` when it differs (a new version may add keys); returns its path. */
export function writeConfigSchema(home: string): string {
  const file = join(home, CONFIG_SCHEMA_FILE);
  // Often the first file of a fresh install (`setup`, `config set`): the home it makes is private.
  makeFolders(home, 0o700);
  const text = `${JSON.stringify(configJsonSchema(), null, 2)}\n`;
  if (!existsSync(file) || readFileSync(file, 'utf8') !== text) writeFileAtomic(file, text);
  return file;
}

/** The first-line comment that points YAML editors at the schema: relative when it sits beside the config, so the folder can move. */
export function schemaModeline(configFile: string, schemaFile: string): string {
  const target = dirname(configFile) === dirname(schemaFile) ? `./${basename(schemaFile)}` : schemaFile;
  return ` yaml-language-server: $schema=${target}`;
}

function keySchema(definition: KeyDefinition): JsonSchema {
  const { $schema: _, ...schema } = z.toJSONSchema(definition.schema, { target: 'draft-7', io: 'input', unrepresentable: 'any' }) as JsonSchema;
  // An empty text key (`model_id:`) loads as "".
  if (isText(definition) && definition.schema.safeParse('').success) schema['type'] = ['string', 'null'];
  const aliases = Object.keys(VALUE_ALIASES[definition.key] ?? {});
  if (Array.isArray(schema['enum']) && aliases.length > 0) schema['enum'] = [...(schema['enum'] as unknown[]), ...aliases];
  const note = definition.noEffect ? ` No effect in MetaClaw-TS: ${definition.noEffect.reason}.` : '';
  return { ...schema, description: `${definition.doc}${note}`, default: definition.default };
}

function isText(definition: KeyDefinition): boolean {
  return definition.kind === 'string' || definition.kind === 'secret' || definition.kind === 'path';
}

function section(): JsonSchema {
  return { type: 'object', properties: {}, additionalProperties: false };
}

function place(root: JsonSchema, key: string, schema: JsonSchema): void {
  const parts = key.split('.');
  let node = root;
  for (const part of parts.slice(0, -1)) {
    const properties = node['properties'] as Record<string, JsonSchema>;
    node = properties[part] ??= section();
  }
  (node['properties'] as Record<string, JsonSchema>)[parts.at(-1)!] = schema;
}
