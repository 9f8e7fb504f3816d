import { randomBytes } from 'node:crypto';
import type { AnthropicImageBlock } from '../../types/index.js';

/** Helpers shared by both translation directions and the assemblers. */

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function readString(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

export function readNumber(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) ? value : undefined;
}

export function readArray(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [];
}

/** JSON.parse that answers undefined instead of throwing. */
export function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/** Copies `source` without `keys`: the pass-through for unknown top-level request fields. */
export function omitKeys(source: Record<string, unknown>, keys: ReadonlySet<string>): Record<string, unknown> {
  const result: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(source)) {
    if (!keys.has(key)) result[key] = value;
  }
  return result;
}

export function unixSeconds(): number {
  return Math.floor(Date.now() / 1000);
}

const ID_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

function randomSuffix(length = 24): string {
  const bytes = randomBytes(length);
  let suffix = '';
  for (const byte of bytes) suffix += ID_ALPHABET[byte % ID_ALPHABET.length];
  return suffix;
}

/** Keeps `id` when present, adding `prefix` unless it already has it; else synthesizes one. */
export function prefixedId(prefix: string, id: unknown): string {
  if (typeof id !== 'string' || id === '') return `${prefix}${randomSuffix()}`;
  return id.startsWith(prefix) ? id : `${prefix}${id}`;
}

/**
 * Tool call ids keep their value between formats (clients pair results with calls by them);
 * missing ones are made up. Anthropic accepts only `[a-zA-Z0-9_-]`, while some OpenAI-compatible
 * servers send ids like `functions.search:0`; calls and results are cleaned alike, so they pair.
 */
export function toolUseId(id: unknown): string {
  return typeof id === 'string' && id !== '' ? id.replace(/[^a-zA-Z0-9_-]/g, '_') : `toolu_${randomSuffix()}`;
}

/** See toolUseId; OpenAI accepts any id string. */
export function toolCallId(id: unknown): string {
  return typeof id === 'string' && id !== '' ? id : `call_${randomSuffix()}`;
}

/**
 * Anthropic requires `tool_use.input` to be an object, OpenAI carries arguments as any string.
 * Empty arguments become `{}`; arguments that are not a JSON object are kept verbatim as
 * `{ _raw: text }` rather than lost, and `toolInputToArguments` turns that back into the raw text.
 */
const RAW_ARGUMENTS_KEY = '_raw';

export function toolArgumentsToInput(argumentsText: unknown): Record<string, unknown> {
  if (typeof argumentsText !== 'string' || argumentsText.trim() === '') return {};
  const parsed = parseJson(argumentsText);
  return isRecord(parsed) ? parsed : { [RAW_ARGUMENTS_KEY]: argumentsText };
}

export function toolInputToArguments(input: unknown): string {
  if (input === undefined || input === null) return '{}';
  if (isRecord(input)) {
    const keys = Object.keys(input);
    const raw = input[RAW_ARGUMENTS_KEY];
    if (keys.length === 1 && typeof raw === 'string') return raw;
  }
  return JSON.stringify(input);
}

/** `data:<media>;base64,<data>` → base64 source; any other URL → url source. */
export function imageUrlToSource(url: string): AnthropicImageBlock['source'] {
  const match = /^data:([^;,]+)((?:;[^;,]*)*);base64,(.*)$/s.exec(url);
  if (match) return { type: 'base64', media_type: match[1] ?? '', data: match[3] ?? '' };
  return { type: 'url', url };
}

export function imageSourceToUrl(source: unknown): string | undefined {
  if (!isRecord(source)) return undefined;
  if (source.type === 'base64') {
    const mediaType = readString(source.media_type);
    const data = readString(source.data);
    return mediaType !== undefined && data !== undefined ? `data:${mediaType};base64,${data}` : undefined;
  }
  return readString(source.url);
}

/**
 * The text of OpenAI message content: a string, or the `text` (and `refusal`) parts of a part list.
 * Other part kinds carry no text and are skipped.
 */
export function openAIContentText(content: unknown): string {
  if (typeof content === 'string') return content;
  return readArray(content)
    .map((part) => (isRecord(part) ? (readString(part.text) ?? readString(part.refusal)) : undefined))
    .filter((text): text is string => text !== undefined)
    .join('');
}

/** The text of Anthropic content: a string, or the concatenated `text` blocks. */
export function anthropicContentText(content: unknown, separator = ''): string {
  if (typeof content === 'string') return content;
  return readArray(content)
    .map((block) => (isRecord(block) && block.type === 'text' ? readString(block.text) : undefined))
    .filter((text): text is string => text !== undefined)
    .join(separator);
}

/** Reasoning text: `reasoning_content` (DeepSeek, vLLM, the proxy's own) or `reasoning` (OpenRouter, newer vLLM). */
export function readReasoning(message: Record<string, unknown>): string {
  return readString(message.reasoning_content) ?? readString(message.reasoning) ?? '';
}
