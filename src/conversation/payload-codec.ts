import { hash as digest } from 'node:crypto';
import type { JsonBody } from './types.js';
import { StoreError } from '../errors.js';

/**
 * How request bodies are stored. Small bodies are kept whole. Large ones (an OpenClaw turn is
 * ~60 KB, and resends the whole conversation every turn) are split into parts — each message, the
 * tools, the system prompt — stored once by content hash, so a session costs about the size of its
 * conversation rather than its square. Hashing is far cheaper than compressing on every request.
 */
export interface SegmentSink {
  put(hash: string, json: string): void;
}

export interface SegmentSource {
  get(hash: string): string | undefined;
}

const INLINE_LIMIT = 16 * 1024;

interface SegmentedDocument {
  v: 1;
  order: string[];
  head: Record<string, unknown>;
  messages?: string[];
  tools?: string;
  system?: string;
}

/** Encodes a body for storage (its text is used when at hand, its object when it is split). */
export function encodeDocument(body: JsonBody, sink: SegmentSink): string {
  const serialized = body.text ?? JSON.stringify(body.object);
  if (serialized.length <= INLINE_LIMIT) return `{"v":1,"inline":${serialized}}`;
  const object = body.object ?? (JSON.parse(serialized) as Record<string, unknown>);
  const document: SegmentedDocument = { v: 1, order: Object.keys(object), head: {} };
  for (const [key, value] of Object.entries(object)) {
    if (key === 'messages' && Array.isArray(value)) document.messages = value.map((message) => store(message, sink));
    else if ((key === 'tools' || key === 'system') && value !== undefined && value !== null && typeof value !== 'number' && typeof value !== 'boolean') document[key] = store(value, sink);
    else document.head[key] = value;
  }
  return JSON.stringify(document);
}

/** The stored body as an object again, or undefined when a part has been pruned. */
export function decodeDocument(stored: string, source: SegmentSource): unknown {
  const parsed = JSON.parse(stored) as { v: 1; inline?: unknown } & Partial<SegmentedDocument>;
  if ('inline' in parsed) return parsed.inline;
  const load = (hash: string): unknown => {
    const json = source.get(hash);
    if (json === undefined) throw new StoreError(`payload segment ${hash} is missing`, 'payload_part_missing');
    return JSON.parse(json) as unknown;
  };
  const result: Record<string, unknown> = {};
  for (const key of parsed.order ?? []) {
    if (key === 'messages' && parsed.messages) result[key] = parsed.messages.map(load);
    else if (key === 'tools' && parsed.tools) result[key] = load(parsed.tools);
    else if (key === 'system' && parsed.system) result[key] = load(parsed.system);
    else result[key] = parsed.head?.[key];
  }
  return result;
}

function store(value: unknown, sink: SegmentSink): string {
  const json = JSON.stringify(value);
  const key = digest('sha256', json, 'base64url');
  sink.put(key, json);
  return key;
}
