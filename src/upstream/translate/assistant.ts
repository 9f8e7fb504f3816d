import type { AnthropicContentBlock, AnthropicThinkingBlock, OpenAIChatCompletion, OpenAIToolCall } from '../../types/index.js';
import {
  anthropicContentText,
  isRecord,
  openAIContentText,
  readArray,
  readReasoning,
  readString,
  toolArgumentsToInput,
  toolCallId,
  toolInputToArguments,
  toolUseId,
} from './common.js';

/**
 * One assistant answer in a format-neutral shape. Requests, responses and assemblers of both
 * formats read assistant content through here. Tool call ids are kept as sent ('' when missing);
 * the converters below synthesize ids, the assemblers record what came.
 */
export interface AssistantParts {
  text: string;
  reasoning: string;
  toolCalls: Array<{ id: string; name: string; arguments: string }>;
}

export function readAnthropicAssistant(content: unknown): AssistantParts {
  const blocks = readArray(content).filter(isRecord);
  return {
    text: anthropicContentText(blocks),
    reasoning: blocks.map((block) => (block.type === 'thinking' ? (readString(block.thinking) ?? '') : '')).join(''),
    toolCalls: blocks
      .filter((block) => block.type === 'tool_use')
      .map((block) => ({ id: readString(block.id) ?? '', name: readString(block.name) ?? '', arguments: toolInputToArguments(block.input) })),
  };
}

export function readOpenAIAssistant(message: Record<string, unknown>): AssistantParts {
  const toolCalls: AssistantParts['toolCalls'] = [];
  for (const call of readArray(message.tool_calls)) {
    if (isRecord(call) && isRecord(call.function)) toolCalls.push({ id: readString(call.id) ?? '', ...readFunction(call.function) });
  }
  if (isRecord(message.function_call)) {
    const legacy = readFunction(message.function_call);
    toolCalls.push({ id: legacyFunctionCallId(legacy.name), ...legacy });
  }
  const text = openAIContentText(message.content);
  return { text: text === '' ? (readString(message.refusal) ?? '') : text, reasoning: readReasoning(message), toolCalls };
}

function readFunction(definition: Record<string, unknown>): { name: string; arguments: string } {
  const argumentsValue = definition.arguments;
  // A few servers send arguments as an object rather than a JSON string.
  const argumentsText = typeof argumentsValue === 'string' ? argumentsValue : argumentsValue === undefined ? '' : JSON.stringify(argumentsValue);
  return { name: readString(definition.name) ?? '', arguments: argumentsText };
}

/**
 * Legacy `function_call` has no id, so the call and its `function` result both get one derived
 * from the function name; that pairs them as Anthropic requires.
 */
export function legacyFunctionCallId(name: string): string {
  return `call_${name.replace(/[^a-zA-Z0-9_-]/g, '_')}`;
}

/**
 * Anthropic blocks for an assistant answer. Reasoning becomes a thinking block only in responses:
 * it has no signature, so the client can show it, but the proxy never sends it upstream again.
 */
export function assistantToAnthropicBlocks(parts: AssistantParts, options: { includeThinking: boolean }): AnthropicContentBlock[] {
  const blocks: AnthropicContentBlock[] = [];
  if (options.includeThinking && parts.reasoning !== '') blocks.push(unsignedThinkingBlock(parts.reasoning));
  // Anthropic rejects empty and whitespace-only text blocks.
  if (parts.text.trim() !== '') blocks.push({ type: 'text', text: parts.text });
  for (const call of parts.toolCalls) blocks.push({ type: 'tool_use', id: toolUseId(call.id), name: call.name, input: toolArgumentsToInput(call.arguments) });
  return blocks;
}

export function unsignedThinkingBlock(thinking: string): AnthropicThinkingBlock {
  return { type: 'thinking', thinking, signature: '' };
}

export type OpenAIAssistantMessage = OpenAIChatCompletion['choices'][number]['message'];

/** OpenAI's assistant message: content is null when the answer is only tool calls, as OpenAI sends it. */
export function assistantToOpenAIMessage(parts: AssistantParts, options: { includeReasoning: boolean }): OpenAIAssistantMessage {
  const toolCalls: OpenAIToolCall[] = parts.toolCalls.map((call) => ({
    id: toolCallId(call.id),
    type: 'function',
    function: { name: call.name, arguments: call.arguments },
  }));
  const message: OpenAIAssistantMessage = { role: 'assistant', content: parts.text === '' && toolCalls.length > 0 ? null : parts.text };
  if (options.includeReasoning && parts.reasoning !== '') message.reasoning_content = parts.reasoning;
  if (toolCalls.length > 0) message.tool_calls = toolCalls;
  return message;
}
