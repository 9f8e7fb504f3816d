import type { OpenAITool, ResponsesRequest } from '../../types/index.js';
import { isRecord, parseJson, readArray, readString } from './common.js';

/**
 * A Responses request's client tools as chat function tools, and the way back. Besides plain
 * function tools the Responses API has `custom` tools (freeform text input, optionally held to a
 * grammar), `namespace` tools grouping function and custom tools, and `additional_tools` input
 * items adding tools mid-conversation (how Codex sends its tools). Chat knows flat function tools
 * only, with names of at most 64 characters out of `[a-zA-Z0-9_-]`, so every tool gets one such
 * name, unique in the request, and a call to it is read back as the client's own kind of call.
 */

/** What a chat tool name stands for in the client's request. */
export interface ClientTool {
  name: string;
  namespace?: string;
  /** A custom tool takes its input as one string: the chat tool's only parameter, `input`. */
  kind: 'function' | 'custom';
}

export interface ResponsesTools {
  /** The chat tools, in the order the request has them. */
  chatTools: OpenAITool[];
  /** The chat name of a client tool; an unknown tool keeps its name. */
  chatName(name: string, namespace: string | undefined): string;
  /** The client tool behind a chat tool name; undefined for a name the request never gave. */
  clientTool(chatName: string): ClientTool | undefined;
}

const NAME_LIMIT = 64;
const INVALID_NAME_CHARACTERS = /[^a-zA-Z0-9_-]/g;
/** Between a namespace and a tool's name when the bare name would be ambiguous. */
const NAMESPACE_SEPARATOR = '__';

/** A custom tool's one parameter. */
const CUSTOM_PARAMETERS = {
  type: 'object',
  properties: { input: { type: 'string', description: 'The whole input for the tool, as free text.' } },
  required: ['input'],
  additionalProperties: false,
};

interface Definition {
  tool: ClientTool;
  source: Record<string, unknown>;
}

/**
 * The request's tools: its `tools`, then those of every `additional_tools` item in `items` (the
 * earlier conversation and the input), in order. Deterministic, so the answer's translation
 * rebuilds the same names from the same request.
 */
export function responsesTools(request: ResponsesRequest, items: readonly unknown[]): ResponsesTools {
  const definitions: Definition[] = [];
  const seen = new Set<string>();
  const add = (tools: unknown, namespace: string | undefined): void => {
    for (const tool of readArray(tools)) {
      if (!isRecord(tool)) continue;
      const name = readString(tool.name);
      if (tool.type === 'namespace') {
        // Namespaces do not nest in the API.
        if (namespace === undefined && name !== undefined) add(tool.tools, name);
        continue;
      }
      // OpenAI's hosted tools (web search, file search, …) run nowhere else.
      if ((tool.type !== 'function' && tool.type !== 'custom') || name === undefined) continue;
      const key = clientKey(name, namespace);
      if (seen.has(key)) continue;
      seen.add(key);
      definitions.push({ tool: { name, ...(namespace === undefined ? {} : { namespace }), kind: tool.type }, source: tool });
    }
  };
  add(request.tools, undefined);
  for (const item of items) if (isRecord(item) && item.type === 'additional_tools') add(item.tools, undefined);

  const bareNames = new Map<string, number>();
  for (const { tool } of definitions) bareNames.set(tool.name, (bareNames.get(tool.name) ?? 0) + 1);
  const byChatName = new Map<string, ClientTool>();
  const byClientKey = new Map<string, string>();
  const chatTools = definitions.map(({ tool, source }) => {
    // The bare name reads best to the model; the namespace joins it only when two tools share it.
    const wanted = tool.namespace === undefined || bareNames.get(tool.name) === 1 ? tool.name : `${tool.namespace}${NAMESPACE_SEPARATOR}${tool.name}`;
    const chatName = uniqueName(wanted, byChatName);
    byChatName.set(chatName, tool);
    byClientKey.set(clientKey(tool.name, tool.namespace), chatName);
    return chatTool(chatName, tool, source);
  });
  return {
    chatTools,
    chatName: (name, namespace) => byClientKey.get(clientKey(name, namespace)) ?? name,
    clientTool: (chatName) => byChatName.get(chatName),
  };
}

/** A custom tool call's input from the chat call's arguments: `{"input": "…"}`, else the arguments as they came. */
export function customToolInput(chatArguments: string): string {
  const parsed = parseJson(chatArguments);
  if (isRecord(parsed) && typeof parsed.input === 'string') return parsed.input;
  return typeof parsed === 'string' ? parsed : chatArguments;
}

/** A custom tool call's input as the arguments of its chat call. */
export function customToolArguments(input: string): string {
  return JSON.stringify({ input });
}

function clientKey(name: string, namespace: string | undefined): string {
  return namespace === undefined ? name : `${namespace}\u0000${name}`;
}

/** `wanted` within chat's name rules, with a number added when another tool already has it. */
function uniqueName(wanted: string, taken: ReadonlyMap<string, unknown>): string {
  const base = (wanted.replace(INVALID_NAME_CHARACTERS, '_') || 'tool').slice(0, NAME_LIMIT);
  let name = base;
  for (let count = 2; taken.has(name); count++) {
    const suffix = `_${count}`;
    name = `${base.slice(0, NAME_LIMIT - suffix.length)}${suffix}`;
  }
  return name;
}

function chatTool(name: string, tool: ClientTool, source: Record<string, unknown>): OpenAITool {
  const definition: OpenAITool['function'] = { name };
  const description = readString(source.description);
  if (tool.kind === 'custom') {
    definition.description = customDescription(description, source.format);
    definition.parameters = CUSTOM_PARAMETERS;
  } else {
    if (description !== undefined) definition.description = description;
    if (isRecord(source.parameters)) definition.parameters = source.parameters;
    if (typeof source.strict === 'boolean') definition.strict = source.strict;
  }
  return { type: 'function', function: definition };
}

/** A chat model cannot be held to a grammar, so it is told it. */
function customDescription(description: string | undefined, format: unknown): string {
  const parts = description === undefined || description === '' ? [] : [description];
  const definition = isRecord(format) && format.type === 'grammar' ? readString(format.definition) : undefined;
  if (definition !== undefined) {
    const syntax = readString(isRecord(format) ? format.syntax : undefined) ?? 'grammar';
    parts.push(`The input must match this ${syntax} grammar:\n${definition}`);
  }
  parts.push('Pass the whole input as the string parameter `input`.');
  return parts.join('\n\n');
}
