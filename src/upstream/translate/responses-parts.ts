import { BadRequestError } from '../../errors.js';
import { imageUrlToSource, isRecord, readArray, readString } from './common.js';
import { responsesInputItems, responsesItemType } from './request-responses-to-openai.js';

/**
 * The content parts of a Responses request that its chat (or Anthropic) translation cannot carry.
 * Left out, they would vanish: the model would answer a question about an image it never got. A
 * file the client uploaded to OpenAI is known by its id only to OpenAI's file store, which neither
 * a chat server nor Anthropic can read (Chat Completions has no image by file id at all; it takes
 * a file's id, which only OpenAI resolves, and Anthropic takes neither). Such a request is refused
 * with the part named instead, and nothing of it goes upstream.
 */

/** The wire a translated Responses request goes on: Chat Completions or Anthropic Messages. */
export type TranslatedWire = 'openai' | 'anthropic';

/** Parts every translation carries as text. */
const TEXT_PARTS = new Set(['input_text', 'output_text', 'text']);

/** Why a user message's part cannot go on `wire`, or undefined when its translation carries it whole. */
function userPartProblem(part: Record<string, unknown>, wire: TranslatedWire): string | undefined {
  const type = readString(part['type']) ?? '';
  if (TEXT_PARTS.has(type)) return undefined;
  switch (type) {
    case 'input_image':
      if (readString(part['image_url']) !== undefined) return undefined;
      return `an input_image given by file_id cannot be sent to this upstream: it serves ${wireName(wire)}, which has no image by file id, and an uploaded file is known only to the OpenAI file store it was uploaded to; send the image as image_url (a URL or a data: URL)`;
    case 'input_file': {
      const data = readString(part['file_data']);
      if (wire === 'anthropic') {
        if (data !== undefined && imageUrlToSource(data).type === 'base64') return undefined;
        return 'an input_file reaches this upstream (Anthropic Messages) only as file_data, a base64 data: URL; it cannot read a file_id or a file_url';
      }
      if (data !== undefined || readString(part['file_id']) !== undefined) return undefined;
      return 'an input_file reaches this upstream (Chat Completions) only as file_data or file_id; Chat Completions has no file_url';
    }
    case 'input_audio':
      return wire === 'openai' && isRecord(part['input_audio'])
        ? undefined
        : `an input_audio part cannot be sent to this upstream (${wireName(wire)}${wire === 'openai' ? ': it needs its input_audio object' : ' takes no audio'})`;
    default:
      return `a content part of type "${type}" has no ${wireName(wire)} form, so this upstream cannot be sent it`;
  }
}

/** Parts of assistant, system and developer messages: the translation keeps their text only. */
function textPartProblem(part: Record<string, unknown>, wire: TranslatedWire): string | undefined {
  const type = readString(part['type']) ?? '';
  if (TEXT_PARTS.has(type) || type === 'refusal') return undefined;
  return `a content part of type "${type}" can be sent to this upstream (${wireName(wire)}) only in a user message; here only text is carried`;
}

function wireName(wire: TranslatedWire): string {
  return wire === 'openai' ? 'Chat Completions' : 'Anthropic Messages';
}

/**
 * Throws a 400 naming the first part of `input` (after the `history` items of the conversation
 * before it, which name `previous_response_id`) that the translation to `wire` would leave out.
 */
export function refuseUncarriedParts(input: unknown, wire: TranslatedWire, history: readonly unknown[] = []): void {
  const items = [...history, ...responsesInputItems(input)];
  items.forEach((item, index) => {
    if (!isRecord(item)) return;
    const kind = responsesItemType(item);
    const field = kind === 'message' ? 'content' : kind === 'function_call_output' || kind === 'custom_tool_call_output' ? 'output' : undefined;
    if (field === undefined) return;
    // A tool output's images, files and audio go on as a user message's (request-responses-to-openai.ts).
    const user = kind !== 'message' || (item['role'] !== 'assistant' && item['role'] !== 'system' && item['role'] !== 'developer');
    readArray(item[field]).forEach((part, partIndex) => {
      if (!isRecord(part)) return;
      const problem = user ? userPartProblem(part, wire) : textPartProblem(part, wire);
      if (problem === undefined) return;
      const param = index < history.length ? 'previous_response_id' : `input.${index - history.length}.${field}.${partIndex}`;
      throw new BadRequestError('unsupported_content_part', `${param}: ${problem}.`, param);
    });
  });
}

/**
 * Top-level fields that name what OpenAI keeps for the client: a conversation of its Conversations
 * API (whose items go before `input`) and a stored prompt (its instructions and messages). No other
 * upstream can read them, and translated without them the model would answer with no history or
 * no instructions, as if the client had sent none.
 */
const OPENAI_KEPT: Readonly<Record<string, string>> = {
  conversation:
    "a conversation is kept by OpenAI's Conversations API, whose items this upstream cannot read; send the conversation in input, or continue it with previous_response_id",
  prompt: 'a stored prompt is kept by OpenAI, and this upstream cannot read its instructions; send them as instructions',
};

/** Throws a 400 naming a field of `body` that refers to something only OpenAI keeps (see OPENAI_KEPT). */
export function refuseOpenAIKept(body: Record<string, unknown>, wire: TranslatedWire): void {
  for (const [field, problem] of Object.entries(OPENAI_KEPT)) {
    if (body[field] === undefined || body[field] === null) continue;
    throw new BadRequestError('unsupported_parameter', `${field}: ${problem} (it serves ${wireName(wire)}).`, field);
  }
}
