import { z } from 'zod';
import type { SessionRow, TurnRow } from '../../conversation/types.js';
import { fromPostgresText } from './text.js';

/**
 * The conversation tables' rows as the team store returns them, checked: other nodes (and other
 * versions of MetaClaw) write these tables too. BIGINT columns arrive as text from the driver and
 * become numbers, as SQLite's rows have them; text columns get their U+0000 back (text.ts).
 */

const text = z.string().transform(fromPostgresText);
const nullableText = text.nullable();
const bigint = z.coerce.number();
const nullableBigint = z.coerce.number().nullable();

export const sessionRowSchema = z.object({
  id: text,
  identity_source: text,
  lineage: text,
  scope: nullableText,
  client_format: text,
  started_at: bigint,
  last_turn_at: bigint,
  ended_at: nullableBigint,
  end_reason: nullableText,
  turn_count: bigint,
  main_turn_count: bigint,
  learning: bigint,
}) satisfies z.ZodType<SessionRow>;

export const turnRowSchema = z.object({
  id: text,
  session_id: text,
  seq: bigint,
  turn_type: text,
  client_profile: nullableText,
  side_request: nullableText,
  client_format: text,
  upstream_name: nullableText,
  upstream_format: nullableText,
  model: nullableText,
  stream: bigint,
  query: nullableText,
  response_text: nullableText,
  tool_calls: nullableText,
  finish_reason: nullableText,
  input_tokens: nullableBigint,
  output_tokens: nullableBigint,
  status: nullableBigint,
  outcome: text,
  error: nullableText,
  attempts: bigint,
  started_at: bigint,
  first_byte_ms: nullableBigint,
  duration_ms: nullableBigint,
  response_id: nullableText,
}) satisfies z.ZodType<TurnRow>;

/** turn_payloads: the stored body documents are JSON text the codec wrote (no U+0000 in them), kept as they are. */
export const payloadRowSchema = z.object({
  received: z.string().nullable(),
  injected: z.string().nullable(),
  forwarded: z.string().nullable(),
  received_headers: z.string().nullable(),
  stripped_keys: z.string().nullable(),
});
export type PayloadRow = z.infer<typeof payloadRowSchema>;

/** Row parsers that return the conversation module's own row types (a turn row keeps the key order of SELECT *). */
export const parseSessionRow = (row: unknown): SessionRow => sessionRowSchema.parse(row);
export const parseTurnRow = (row: unknown): TurnRow => turnRowSchema.parse(row);
