import type { AnthropicTool, AnthropicToolChoice, OpenAITool, OpenAIToolChoice } from '../../types/index.js';
import { isRecord, readString } from './common.js';

/** Tool definitions and tool choice, both directions, from one table each. */

const EMPTY_SCHEMA: Readonly<Record<string, unknown>> = { type: 'object', properties: {} };

/** Non-function tools (OpenAI `custom`, ...) have no Anthropic equivalent and are skipped. */
export function openAIToolsToAnthropic(tools: readonly unknown[]): AnthropicTool[] {
  const result: AnthropicTool[] = [];
  for (const tool of tools) {
    const definition = isRecord(tool) && tool.type === 'function' && isRecord(tool.function) ? tool.function : undefined;
    const name = definition === undefined ? undefined : readString(definition.name);
    if (definition === undefined || name === undefined) continue;
    const converted: AnthropicTool = { name, input_schema: isRecord(definition.parameters) ? definition.parameters : { ...EMPTY_SCHEMA } };
    const description = readString(definition.description);
    if (description !== undefined) converted.description = description;
    result.push(converted);
  }
  return result;
}

/** Legacy `functions` are the bare `function` objects of tools. */
export function legacyFunctionsToAnthropic(functions: readonly unknown[]): AnthropicTool[] {
  return openAIToolsToAnthropic(functions.map((definition) => ({ type: 'function', function: definition })));
}

/** Server tools (web search, code execution, ...) have no input schema and cannot run on an OpenAI upstream. */
export function anthropicToolsToOpenAI(tools: readonly unknown[]): OpenAITool[] {
  const result: OpenAITool[] = [];
  for (const tool of tools) {
    if (!isRecord(tool) || !isRecord(tool.input_schema)) continue;
    const name = readString(tool.name);
    if (name === undefined) continue;
    const definition: OpenAITool['function'] = { name, parameters: tool.input_schema };
    const description = readString(tool.description);
    if (description !== undefined) definition.description = description;
    result.push({ type: 'function', function: definition });
  }
  return result;
}

const CHOICE_WORDS: ReadonlyArray<readonly ['auto' | 'none' | 'required', 'auto' | 'none' | 'any']> = [
  ['auto', 'auto'],
  ['none', 'none'],
  ['required', 'any'],
];

export function openAIToolChoiceToAnthropic(choice: unknown): AnthropicToolChoice | undefined {
  const word = CHOICE_WORDS.find(([openAI]) => openAI === choice);
  if (word) return { type: word[1] };
  const name = isRecord(choice) && isRecord(choice.function) ? readString(choice.function.name) : undefined;
  return name === undefined ? undefined : { type: 'tool', name };
}

/** Legacy `function_call`: 'auto' | 'none' | {name}. */
export function legacyFunctionCallToAnthropic(functionCall: unknown): AnthropicToolChoice | undefined {
  if (isRecord(functionCall)) return openAIToolChoiceToAnthropic({ type: 'function', function: functionCall });
  return openAIToolChoiceToAnthropic(functionCall);
}

export function anthropicToolChoiceToOpenAI(choice: unknown): OpenAIToolChoice | undefined {
  if (!isRecord(choice)) return undefined;
  const word = CHOICE_WORDS.find(([, anthropic]) => anthropic === choice.type);
  if (word) return word[0];
  const name = choice.type === 'tool' ? readString(choice.name) : undefined;
  return name === undefined ? undefined : { type: 'function', function: { name } };
}
