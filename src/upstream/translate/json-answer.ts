import type { AnthropicMessagesRequest, AnthropicTool, AssembledResponse, OpenAIChatRequest } from '../../types/index.js';
import type { AssistantParts } from './assistant.js';
import { isRecord, readArray, readString } from './common.js';
import { legacyFunctionsToAnthropic, openAIToolsToAnthropic } from './tools.js';

/**
 * Chat's `response_format` on an Anthropic upstream, which has no such field. A JSON Schema is
 * enforced the way Anthropic itself advises: one tool whose input is the schema, forced with
 * `tool_choice`, and its input read back as the answer's text (the JSON the client asked for).
 * Where a forced tool cannot go (the client has tools of its own, thinking is on, the schema's root
 * is not an object) and for `json_object`, the system prompt asks for JSON instead: not enforced.
 * Request and answer both decide from the chat request, so they agree without any state kept.
 */

/** The tool's name when the schema has none Anthropic accepts (letters, digits, `_`, `-`; at most 64). */
const FALLBACK_TOOL_NAME = 'json_answer';

const TOOL_DESCRIPTION = 'Give your answer by calling this tool: its input is your whole answer, as the JSON the user asked for.';

const JSON_OBJECT_INSTRUCTION = 'Answer with one JSON object and nothing else: no other text, no Markdown code fence.';

/** What a chat request's `response_format` becomes towards Anthropic. */
export type AnthropicJsonAnswer = { kind: 'tool'; tool: AnthropicTool } | { kind: 'instruction'; text: string } | undefined;

export function anthropicJsonAnswer(request: OpenAIChatRequest): AnthropicJsonAnswer {
  const format = request['response_format'];
  if (!isRecord(format)) return undefined;
  if (format.type === 'json_object') return { kind: 'instruction', text: JSON_OBJECT_INSTRUCTION };
  const definition = format.type === 'json_schema' && isRecord(format.json_schema) ? format.json_schema : undefined;
  if (definition === undefined || !isRecord(definition.schema)) return undefined;
  const schema = definition.schema;
  const clientTools = hasClientTools(request);
  // Anthropic takes only an object schema as a tool's input, and no forced tool while thinking.
  if (!clientTools && !thinks(request) && schema.type === 'object') {
    const description = readString(definition.description);
    return {
      kind: 'tool',
      tool: {
        name: toolName(definition.name),
        description: description === undefined ? TOOL_DESCRIPTION : `${TOOL_DESCRIPTION} ${description}`,
        input_schema: schema,
      },
    };
  }
  return { kind: 'instruction', text: schemaInstruction(schema, clientTools) };
}

/** The forced tool's name when the answer to `request` comes back in one, else undefined. */
export function jsonToolName(request: OpenAIChatRequest): string | undefined {
  const answer = anthropicJsonAnswer(request);
  return answer?.kind === 'tool' ? answer.tool.name : undefined;
}

/** The request fields for the forced tool: one call only, so its input is one JSON value. */
export function forcedToolFields(tool: AnthropicTool): Pick<AnthropicMessagesRequest, 'tools' | 'tool_choice'> {
  return { tools: [tool], tool_choice: { type: 'tool', name: tool.name, disable_parallel_tool_use: true } };
}

/** The system prompt with `instruction` appended as its last paragraph (or block, keeping cache breakpoints where they are). */
export function withInstruction(system: AnthropicMessagesRequest['system'], instruction: string): NonNullable<AnthropicMessagesRequest['system']> {
  if (system === undefined) return instruction;
  if (typeof system === 'string') return `${system}\n\n${instruction}`;
  return [...system, { type: 'text', text: instruction }];
}

/**
 * An answer as the client sees it: the forced tool's call is its text (after any text the model
 * wrote, which a real Anthropic model does not with a forced tool), and it ended normally.
 */
export function asJsonAnswer<Parts extends AssistantParts>(parts: Parts, toolName: string | undefined): Parts {
  if (toolName === undefined) return parts;
  const call = parts.toolCalls.find((candidate) => candidate.name === toolName);
  if (call === undefined) return parts;
  return { ...parts, text: parts.text + (call.arguments === '' ? '{}' : call.arguments), toolCalls: parts.toolCalls.filter((other) => other !== call) };
}

/** Anthropic's stop reason for the forced tool's call is a normal end to the client. */
export function jsonAnswerStop(stopReason: string | null | undefined, toolName: string | undefined): string | null | undefined {
  return toolName !== undefined && stopReason === 'tool_use' ? 'end_turn' : stopReason;
}

/** The record's answer as the client got it (the assemblers read the upstream's own events). */
export function recordedJsonAnswer(response: AssembledResponse, toolName: string | undefined): AssembledResponse {
  const answer = asJsonAnswer(response, toolName);
  if (answer === response) return response;
  return answer.toolCalls.length === 0 && answer.finishReason === 'tool_calls' ? { ...answer, finishReason: 'stop' } : answer;
}

function toolName(name: unknown): string {
  const cleaned = (readString(name) ?? '').replace(/[^a-zA-Z0-9_-]/g, '_').slice(0, 64);
  return cleaned === '' ? FALLBACK_TOOL_NAME : cleaned;
}

/** The same test the tool translation makes: tools that convert to Anthropic's. */
function hasClientTools(request: OpenAIChatRequest): boolean {
  const legacy = request.tools === undefined && Array.isArray(request['functions']);
  const tools = legacy ? legacyFunctionsToAnthropic(readArray(request['functions'])) : openAIToolsToAnthropic(readArray(request.tools));
  return tools.length > 0;
}

/** `thinking` is Anthropic's own key, passed through as sent. */
function thinks(request: OpenAIChatRequest): boolean {
  const thinking = request['thinking'];
  return isRecord(thinking) && thinking.type !== 'disabled';
}

function schemaInstruction(schema: Record<string, unknown>, tools: boolean): string {
  const when = tools ? 'When you give your final answer (not a tool call), give it as' : 'Answer with';
  return `${when} one JSON value that matches this JSON Schema, and nothing else (no other text, no Markdown code fence):\n${JSON.stringify(schema)}`;
}
