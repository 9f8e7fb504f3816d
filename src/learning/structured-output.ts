import { z } from 'zod';
import type { WireFormat } from '../config/index.js';

/**
 * Structured output for learning calls: the JSON Schema asked of the upstream (OpenAI's
 * `response_format: json_schema`, Anthropic's forced tool), generated from the zod schema that
 * checks the answer, and the upstreams that turned it down.
 */

export type JsonSchema = Record<string, unknown>;

/** What a learning call asks the model for: a name the API shows it, and the schema its answer must match. */
export interface JsonAnswer<T> {
  /** Letters, digits, `_` and `-`, at most 64: both APIs name the schema (OpenAI) or the tool (Anthropic) with it. */
  name: string;
  schema: z.ZodType<T>;
}

export interface AnswerSchemas {
  /** The zod schema as JSON Schema: Anthropic's tool input, and OpenAI's when strict mode cannot express it. */
  plain: JsonSchema;
  /** The same within OpenAI's strict-mode rules (every property required, optional ones nullable), if they can express it. */
  strict: JsonSchema | undefined;
}

const generated = new WeakMap<z.ZodType, AnswerSchemas>();

/** Generated once per zod schema: the schemas are constants, the calls are many. */
export function answerSchemas(schema: z.ZodType): AnswerSchemas {
  let schemas = generated.get(schema);
  if (!schemas) {
    // Output side: defaulted fields are asked for too (the model should state them), and `preprocess` shows its target shape.
    const { $schema: _, ...plain } = z.toJSONSchema(schema, { io: 'output', unrepresentable: 'any' }) as JsonSchema;
    schemas = { plain, strict: plain['type'] === 'object' ? strictNode(plain, 0) : undefined };
    generated.set(schema, schemas);
  }
  return schemas;
}

/** The request fields that ask for the answer in this shape. */
export function structuredRequest(format: WireFormat, name: string, schemas: AnswerSchemas): Record<string, unknown> {
  if (format === 'anthropic') {
    return {
      tools: [{ name, description: 'Give your answer by calling this tool: its input is the JSON the instructions ask for.', input_schema: schemas.plain }],
      tool_choice: { type: 'tool', name },
    };
  }
  return {
    response_format: {
      type: 'json_schema',
      json_schema: schemas.strict ? { name, schema: schemas.strict, strict: true } : { name, schema: schemas.plain, strict: false },
    },
  };
}

/** A 400 (or 422) about the structured-output fields: the upstream does not take them, plain text will do. */
export function refusesStructuredOutput(status: number, body: string): boolean {
  return (status === 400 || status === 422) && /response_format|json_schema|tool/i.test(body);
}

/**
 * Strict mode makes every property required, so an optional one comes back as null: dropped again
 * where the plain schema does not allow null, so the zod schema sees the field absent as it expects.
 */
export function withoutAddedNulls(value: unknown, schema: JsonSchema): unknown {
  if (Array.isArray(value)) return isSchema(schema['items']) ? value.map((item) => withoutAddedNulls(item, schema['items'] as JsonSchema)) : value;
  const properties = schema['properties'];
  if (!isSchema(value) || !isSchema(properties)) return value;
  const required = new Set(Array.isArray(schema['required']) ? (schema['required'] as unknown[]) : []);
  const kept: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) {
    const property = properties[key];
    if (!isSchema(property)) kept[key] = item;
    else if (item !== null || required.has(key) || allowsNull(property)) kept[key] = withoutAddedNulls(item, property);
  }
  return kept;
}

/** Upstreams (format, base URL, model) that turned structured output down, and why; process memory, learned again after a restart. */
const textOnly = new Map<string, string>();

function upstreamKey(target: { format: WireFormat; baseUrl: string; model: string }): string {
  return `${target.format} ${target.baseUrl} ${target.model}`;
}

export function takesStructuredOutput(target: { format: WireFormat; baseUrl: string; model: string }): boolean {
  return !textOnly.has(upstreamKey(target));
}

/** Remembers that this upstream answers in text only; true the first time, so it is said once. */
export function rememberTextOnly(target: { format: WireFormat; baseUrl: string; model: string }, reason: string): boolean {
  const key = upstreamKey(target);
  if (textOnly.has(key)) return false;
  textOnly.set(key, reason);
  return true;
}

/** OpenAI strict mode's subset of JSON Schema (its Structured Outputs guide, "Supported schemas"). */
const STRICT_KEYWORDS = new Set([
  'type',
  'properties',
  'required',
  'additionalProperties',
  'items',
  'enum',
  'const',
  'anyOf',
  'description',
  'title',
  'pattern',
  'format',
  'minimum',
  'maximum',
  'exclusiveMinimum',
  'exclusiveMaximum',
  'multipleOf',
  'minItems',
  'maxItems',
]);
/** Refused by strict mode but only narrowing the answer: left out, the zod schema still checks them. */
const DROPPED_KEYWORDS = new Set(['default', 'minLength', 'maxLength', 'examples']);
const STRICT_FORMATS = new Set(['date-time', 'time', 'date', 'duration', 'email', 'hostname', 'ipv4', 'ipv6', 'uuid']);
const STRICT_MAX_DEPTH = 10;

/** The strict-mode form of `node`, or undefined when strict mode cannot express it (any-values, records, tuples, references). */
function strictNode(node: JsonSchema, depth: number): JsonSchema | undefined {
  if (depth > STRICT_MAX_DEPTH) return undefined;
  if (!('type' in node) && !('anyOf' in node) && !('enum' in node) && !('const' in node)) return undefined;
  const strict: JsonSchema = {};
  for (const [keyword, value] of Object.entries(node)) {
    if (DROPPED_KEYWORDS.has(keyword) || (keyword === 'format' && !STRICT_FORMATS.has(String(value)))) continue;
    if (!STRICT_KEYWORDS.has(keyword)) return undefined;
    strict[keyword] = value;
  }
  if (Array.isArray(node['anyOf'])) {
    const branches = (node['anyOf'] as unknown[]).map((branch) => (isSchema(branch) ? strictNode(branch, depth + 1) : undefined));
    if (branches.some((branch) => branch === undefined)) return undefined;
    strict['anyOf'] = branches;
  }
  if ('items' in node) {
    const items = isSchema(node['items']) ? strictNode(node['items'], depth + 1) : undefined;
    if (!items) return undefined;
    strict['items'] = items;
  }
  if (types(node).includes('object')) {
    if (node['additionalProperties'] !== false) return undefined;
    const properties = isSchema(node['properties']) ? node['properties'] : {};
    const required = new Set(Array.isArray(node['required']) ? (node['required'] as unknown[]) : []);
    const converted: JsonSchema = {};
    for (const [name, property] of Object.entries(properties)) {
      const strictProperty = isSchema(property) ? strictNode(property, depth + 1) : undefined;
      if (!strictProperty) return undefined;
      converted[name] = required.has(name) || allowsNull(strictProperty) ? strictProperty : { anyOf: [strictProperty, { type: 'null' }] };
    }
    strict['properties'] = converted;
    strict['required'] = Object.keys(converted);
  }
  return strict;
}

function allowsNull(node: JsonSchema): boolean {
  if (types(node).includes('null') || node['const'] === null) return true;
  if (Array.isArray(node['enum']) && node['enum'].includes(null)) return true;
  return Array.isArray(node['anyOf']) && node['anyOf'].some((branch) => isSchema(branch) && allowsNull(branch));
}

function types(node: JsonSchema): unknown[] {
  const type = node['type'];
  return Array.isArray(type) ? type : type === undefined ? [] : [type];
}

function isSchema(value: unknown): value is JsonSchema {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
