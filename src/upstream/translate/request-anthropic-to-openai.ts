import { BadRequestError } from '../../errors.js';
import type { AnthropicMessagesRequest, OpenAIChatRequest, OpenAIContentPart, OpenAIMessage } from '../../types/index.js';
import { assistantToOpenAIMessage, readAnthropicAssistant } from './assistant.js';
import { anthropicContentText, imageSourceToUrl, isRecord, omitKeys, readArray, readNumber, readString } from './common.js';
import { anthropicToolChoiceToOpenAI, anthropicToolsToOpenAI } from './tools.js';

/** Keys this module converts itself, plus Anthropic-only keys an OpenAI server would reject. */
const NOT_PASSED_THROUGH = new Set([
  'model',
  'messages',
  'system',
  'max_tokens',
  'stop_sequences',
  'temperature',
  'top_p',
  'stream',
  'metadata',
  'tools',
  'tool_choice',
  'top_k',
  'thinking',
  'service_tier',
  'container',
  'mcp_servers',
  'context_management',
  'betas',
  'anthropic_version',
  'anthropic_beta',
]);

/** Separate user and system text blocks are separate paragraphs; assistant blocks are pieces of one answer. */
const PARAGRAPH = '\n\n';

export function anthropicRequestToOpenAI(request: AnthropicMessagesRequest, options: { model?: string }): OpenAIChatRequest {
  const messages: OpenAIMessage[] = [];
  const system = anthropicContentText(request.system, PARAGRAPH);
  if (system !== '') messages.push({ role: 'system', content: system });
  readArray(request.messages).forEach((message, index) => messages.push(...convertMessage(message, `messages.${index}`)));

  const result: OpenAIChatRequest = { ...omitKeys(request, NOT_PASSED_THROUGH), model: options.model ?? request.model, messages };
  const maxTokens = readNumber(request.max_tokens);
  if (maxTokens !== undefined) result.max_tokens = maxTokens;
  const temperature = readNumber(request.temperature);
  if (temperature !== undefined) result.temperature = temperature;
  const topP = readNumber(request.top_p);
  if (topP !== undefined) result.top_p = topP;
  const stop = readArray(request.stop_sequences).filter((sequence): sequence is string => typeof sequence === 'string');
  if (stop.length > 0) result.stop = stop;
  if (typeof request.stream === 'boolean') result.stream = request.stream;
  // Without this an OpenAI stream carries no usage at all.
  if (request.stream === true) result.stream_options = { include_usage: true };
  const userId = isRecord(request.metadata) ? readString(request.metadata.user_id) : undefined;
  if (userId !== undefined) result.user = userId;
  Object.assign(result, convertTools(request));
  return result;
}

/** `at`: where the message is in the request (`messages.2`), to name a block that cannot be carried. */
function convertMessage(message: unknown, at: string): OpenAIMessage[] {
  if (!isRecord(message)) return [];
  // A mid-conversation system message (Claude Code) stays a system message, where it was.
  if (message.role === 'system') return [{ role: 'system', content: anthropicContentText(message.content, PARAGRAPH) }];
  const role = message.role === 'assistant' ? 'assistant' : 'user';
  if (typeof message.content === 'string') return [{ role, content: message.content }];
  if (role === 'assistant') return [assistantMessage(readArray(message.content).filter(isRecord))];
  return userMessages(readArray(message.content), `${at}.content`);
}

/**
 * Tool results become `tool` messages ahead of the user's own text. OpenAI tool messages hold
 * text only, so images inside a tool result move into the user message that follows.
 */
function userMessages(blocks: readonly unknown[], at: string): OpenAIMessage[] {
  const toolMessages: OpenAIMessage[] = [];
  const parts: OpenAIContentPart[] = [];
  blocks.forEach((block, index) => {
    if (!isRecord(block)) return;
    if (block.type === 'tool_result') {
      toolMessages.push({ role: 'tool', tool_call_id: readString(block.tool_use_id) ?? '', content: anthropicContentText(block.content, PARAGRAPH) });
      readArray(block.content).forEach((inner, innerIndex) => {
        if (isRecord(inner) && inner.type === 'image') parts.push(...userPart(inner, `${at}.${index}.content.${innerIndex}`));
      });
    } else {
      parts.push(...userPart(block, `${at}.${index}`));
    }
  });
  if (parts.length === 0) return toolMessages;
  const onlyText = parts.every((part) => part.type === 'text');
  const content = onlyText ? parts.map((part) => readString(part.text) ?? '').join(PARAGRAPH) : parts;
  return [...toolMessages, { role: 'user', content }];
}

/**
 * Text, images and documents. Thinking and server-tool blocks have no OpenAI form and are left
 * out. An image or document the chat format cannot carry (one in Anthropic's file store, a
 * document by URL) is refused, `at` naming it: left out, the model would answer about a file it
 * never got.
 */
function userPart(block: Record<string, unknown>, at: string): OpenAIContentPart[] {
  switch (block.type) {
    case 'text':
      return [{ type: 'text', text: readString(block.text) ?? '' }];
    case 'image': {
      const url = imageSourceToUrl(block.source);
      if (url === undefined) throw uncarried(at, 'an image reaches a Chat Completions upstream only as base64 data or a URL, not from a file store');
      return [{ type: 'image_url', image_url: { url } }];
    }
    case 'document':
      return documentPart(block, at);
    default:
      return [];
  }
}

/** Plain-text documents become text; base64 ones (PDF) a file part. Others have no OpenAI chat form. */
function documentPart(block: Record<string, unknown>, at: string): OpenAIContentPart[] {
  const source = isRecord(block.source) ? block.source : {};
  // A "content" document is its own text blocks.
  const text = source.type === 'text' ? readString(source.data) : source.type === 'content' ? anthropicContentText(source.content, PARAGRAPH) : undefined;
  if (text !== undefined) return [{ type: 'text', text }];
  const fileData = source.type === 'base64' ? imageSourceToUrl(source) : undefined;
  if (fileData === undefined)
    throw uncarried(at, 'a document reaches a Chat Completions upstream only as text or base64 data, not by URL or from a file store');
  const file: Record<string, unknown> = { file_data: fileData };
  const title = readString(block.title);
  if (title !== undefined) file.filename = title;
  return [{ type: 'file', file }];
}

function uncarried(at: string, why: string): BadRequestError {
  return new BadRequestError('unsupported_content_part', `${at}: ${why}.`, at);
}

/** Thinking is dropped: an OpenAI server has no use for Anthropic's signed reasoning. */
function assistantMessage(blocks: ReadonlyArray<Record<string, unknown>>): OpenAIMessage {
  return assistantToOpenAIMessage(readAnthropicAssistant(blocks), { includeReasoning: false });
}

/** parallel_tool_calls and tool_choice are rejected by OpenAI without tools, so they come only with some. */
function convertTools(request: AnthropicMessagesRequest): Pick<OpenAIChatRequest, 'tools' | 'tool_choice' | 'parallel_tool_calls'> {
  const tools = anthropicToolsToOpenAI(readArray(request.tools));
  if (tools.length === 0) return {};
  const result: Pick<OpenAIChatRequest, 'tools' | 'tool_choice' | 'parallel_tool_calls'> = { tools };
  const toolChoice = anthropicToolChoiceToOpenAI(request.tool_choice);
  if (toolChoice !== undefined) result.tool_choice = toolChoice;
  if (isRecord(request.tool_choice) && request.tool_choice.disable_parallel_tool_use === true) result.parallel_tool_calls = false;
  return result;
}
