import type {
  AnthropicContentBlock,
  AnthropicImageBlock,
  AnthropicMessage,
  AnthropicMessagesRequest,
  AnthropicTextBlock,
  AnthropicToolChoice,
  AnthropicToolResultBlock,
  OpenAIChatRequest,
} from '../../types/index.js';
import { BadRequestError } from '../../errors.js';
import { assistantToAnthropicBlocks, legacyFunctionCallId, readOpenAIAssistant } from './assistant.js';
import { imageUrlToSource, isRecord, omitKeys, readArray, readNumber, readString, toolUseId } from './common.js';
import { anthropicJsonAnswer, forcedToolFields, withInstruction } from './json-answer.js';
import { legacyFunctionCallToAnthropic, legacyFunctionsToAnthropic, openAIToolChoiceToAnthropic, openAIToolsToAnthropic } from './tools.js';

/** Keys this module converts itself, plus OpenAI-only keys the Anthropic API would reject. */
const NOT_PASSED_THROUGH = new Set([
  'model',
  'messages',
  'max_tokens',
  'max_completion_tokens',
  'temperature',
  'top_p',
  'stop',
  'stream',
  'user',
  'metadata',
  'tools',
  'tool_choice',
  'parallel_tool_calls',
  'functions',
  'function_call',
  'stream_options',
  'n',
  'logprobs',
  'top_logprobs',
  'presence_penalty',
  'frequency_penalty',
  'seed',
  'response_format',
  'logit_bias',
  'store',
  'reasoning_effort',
  'service_tier',
  'modalities',
  'prediction',
  'audio',
]);

type Role = AnthropicMessage['role'];

interface Turn extends AnthropicMessage {
  content: AnthropicContentBlock[];
}

export function openAIRequestToAnthropic(request: OpenAIChatRequest, options: { defaultMaxTokens: number; model?: string }): AnthropicMessagesRequest {
  const { system, turns } = convertMessages(readArray(request.messages));
  const result: AnthropicMessagesRequest = {
    ...omitKeys(request, NOT_PASSED_THROUGH),
    model: options.model ?? request.model ?? '',
    messages: turns,
    max_tokens: readNumber(request.max_completion_tokens) ?? readNumber(request.max_tokens) ?? options.defaultMaxTokens,
  };
  // `response_format` has no Anthropic field: a forced tool or a system instruction stands for it (json-answer.ts).
  const jsonAnswer = anthropicJsonAnswer(request);
  const fullSystem = jsonAnswer?.kind === 'instruction' ? withInstruction(system, jsonAnswer.text) : system;
  if (fullSystem !== undefined) result.system = fullSystem;
  if (typeof request.stream === 'boolean') result.stream = request.stream;
  const temperature = readNumber(request.temperature);
  // OpenAI allows 0..2, Anthropic 0..1.
  if (temperature !== undefined) result.temperature = Math.min(1, Math.max(0, temperature));
  const topP = readNumber(request.top_p);
  if (topP !== undefined) result.top_p = topP;
  const stopSequences = convertStop(request.stop);
  if (stopSequences.length > 0) result.stop_sequences = stopSequences;
  const userId = readString(request.user) ?? (isRecord(request.metadata) ? readString(request.metadata.user_id) : undefined);
  if (userId !== undefined) result.metadata = { user_id: userId };
  Object.assign(result, jsonAnswer?.kind === 'tool' ? forcedToolFields(jsonAnswer.tool) : convertTools(request));
  return result;
}

function convertMessages(messages: readonly unknown[]): { system: string | AnthropicTextBlock[] | undefined; turns: Turn[] } {
  const systemBlocks: AnthropicTextBlock[] = [];
  const turns: Turn[] = [];
  for (const [index, message] of messages.entries()) {
    if (!isRecord(message)) continue;
    switch (message.role) {
      case 'system':
      case 'developer':
        systemBlocks.push(...textBlocks(message.content));
        break;
      case 'user':
        appendTurn(turns, 'user', userBlocks(message.content, `messages.${index}.content`));
        break;
      case 'assistant':
        appendTurn(turns, 'assistant', assistantBlocks(message));
        break;
      case 'tool':
        appendTurn(turns, 'user', [toolResultBlock(toolUseId(message.tool_call_id), message.content)]);
        break;
      case 'function':
        appendTurn(turns, 'user', legacyFunctionResultBlocks(message));
        break;
    }
  }
  for (const turn of turns) if (turn.role === 'user') turn.content = toolResultsFirst(turn.content);
  return { system: collapseSystem(systemBlocks), turns };
}

/** Anthropic requires alternating roles, so a message with the previous message's role joins it. */
function appendTurn(turns: Turn[], role: Role, blocks: AnthropicContentBlock[]): void {
  if (blocks.length === 0) return;
  const last = turns.at(-1);
  if (last?.role === role) last.content.push(...blocks);
  else turns.push({ role, content: blocks });
}

/** Tool results must open the user message that follows the assistant's tool calls. */
function toolResultsFirst(blocks: AnthropicContentBlock[]): AnthropicContentBlock[] {
  const results = blocks.filter((block) => block.type === 'tool_result');
  return results.length === 0 ? blocks : [...results, ...blocks.filter((block) => block.type !== 'tool_result')];
}

function collapseSystem(blocks: AnthropicTextBlock[]): string | AnthropicTextBlock[] | undefined {
  if (blocks.length === 0) return undefined;
  const plain = blocks.every((block) => block.cache_control === undefined);
  return plain ? blocks.map((block) => block.text).join('\n\n') : blocks;
}

/** Text blocks of any OpenAI content; blank texts are left out because Anthropic rejects them. */
function textBlocks(content: unknown): AnthropicTextBlock[] {
  const parts = typeof content === 'string' ? [{ text: content }] : readArray(content).filter(isRecord);
  const blocks: AnthropicTextBlock[] = [];
  for (const part of parts) {
    const text = readString(part.text) ?? readString(part.refusal);
    if (text !== undefined && text.trim() !== '') blocks.push(withCacheControl({ type: 'text', text }, part));
  }
  return blocks;
}

/** User content: text, images, and PDF files; audio and other part kinds have no Anthropic form. */
/**
 * `at` (a user message's content, `messages.3.content`): a part Anthropic cannot be sent there (a
 * file known by its OpenAI id only, audio) is refused, naming it, rather than left out: the model
 * would answer about a file it never got. Tool results keep their text and images only.
 */
function userBlocks(content: unknown, at?: string): AnthropicContentBlock[] {
  if (!Array.isArray(content)) return textBlocks(content);
  const blocks: AnthropicContentBlock[] = [];
  content.forEach((part, index) => {
    if (!isRecord(part)) return;
    if (part.type === 'text') blocks.push(...textBlocks([part]));
    const imageUrl = part.type === 'image_url' ? readImageUrl(part.image_url) : undefined;
    if (imageUrl !== undefined) blocks.push(withCacheControl({ type: 'image', source: imageUrlToSource(imageUrl) }, part));
    const document = part.type === 'file' ? fileToDocument(part.file) : undefined;
    if (document !== undefined) blocks.push(withCacheControl(document, part));
    if (at === undefined) return;
    if (part.type === 'file' && document === undefined)
      throw uncarried(`${at}.${index}`, 'a file reaches an Anthropic upstream only as file_data, a base64 data: URL; it cannot read an OpenAI file_id');
    if (part.type === 'input_audio') throw uncarried(`${at}.${index}`, 'an Anthropic upstream takes no audio');
  });
  return blocks;
}

function uncarried(at: string, why: string): BadRequestError {
  return new BadRequestError('unsupported_content_part', `${at}: ${why}.`, at);
}

function readImageUrl(imageUrl: unknown): string | undefined {
  return typeof imageUrl === 'string' ? imageUrl : isRecord(imageUrl) ? readString(imageUrl.url) : undefined;
}

function fileToDocument(file: unknown): AnthropicContentBlock | undefined {
  const data = isRecord(file) ? readString(file.file_data) : undefined;
  if (data === undefined) return undefined;
  const source = imageUrlToSource(data);
  return source.type === 'base64' ? { type: 'document', source } : undefined;
}

/** Clients such as OpenRouter users put Anthropic's cache_control on OpenAI parts; it keeps its meaning. */
function withCacheControl<Block extends AnthropicContentBlock>(block: Block, part: Record<string, unknown>): Block {
  return part.cache_control === undefined ? block : { ...block, cache_control: part.cache_control };
}

/** Assistant text and tool calls; `reasoning_content` is dropped (Anthropic needs signed thinking). */
function assistantBlocks(message: Record<string, unknown>): AnthropicContentBlock[] {
  return assistantToAnthropicBlocks(readOpenAIAssistant(message), { includeThinking: false });
}

function toolResultBlock(id: string, content: unknown): AnthropicToolResultBlock {
  const block: AnthropicToolResultBlock = { type: 'tool_result', tool_use_id: id };
  if (typeof content === 'string') {
    if (content !== '') block.content = content;
    return block;
  }
  const parts = userBlocks(content).filter((part): part is AnthropicTextBlock | AnthropicImageBlock => part.type === 'text' || part.type === 'image');
  if (parts.length > 0) block.content = parts;
  return block;
}

function legacyFunctionResultBlocks(message: Record<string, unknown>): AnthropicContentBlock[] {
  const name = readString(message.name);
  const id = readString(message.tool_call_id) ?? (name === undefined ? undefined : legacyFunctionCallId(name));
  return id === undefined ? textBlocks(message.content) : [toolResultBlock(toolUseId(id), message.content)];
}

/** Anthropic rejects whitespace-only stop sequences. */
function convertStop(stop: unknown): string[] {
  const sequences = typeof stop === 'string' ? [stop] : readArray(stop);
  return sequences.filter((sequence): sequence is string => typeof sequence === 'string' && sequence.trim() !== '');
}

/** Anthropic rejects tool_choice without tools, so both are set only when some tool converts. */
function convertTools(request: OpenAIChatRequest): Pick<AnthropicMessagesRequest, 'tools' | 'tool_choice'> {
  const legacy = request.tools === undefined && Array.isArray(request.functions);
  const tools = legacy ? legacyFunctionsToAnthropic(readArray(request.functions)) : openAIToolsToAnthropic(readArray(request.tools));
  if (tools.length === 0) return {};
  let toolChoice: AnthropicToolChoice | undefined = legacy
    ? legacyFunctionCallToAnthropic(request.function_call)
    : openAIToolChoiceToAnthropic(request.tool_choice);
  if (request.parallel_tool_calls === false) {
    toolChoice ??= { type: 'auto' };
    if (toolChoice.type !== 'none') toolChoice = { ...toolChoice, disable_parallel_tool_use: true };
  }
  return toolChoice === undefined ? { tools } : { tools, tool_choice: toolChoice };
}
