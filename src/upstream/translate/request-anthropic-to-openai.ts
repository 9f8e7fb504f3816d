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
  for (const message of readArray(request.messages)) messages.push(...convertMessage(message));

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

function convertMessage(message: unknown): OpenAIMessage[] {
  if (!isRecord(message)) return [];
  // A mid-conversation system message (Claude Code) stays a system message, where it was.
  if (message.role === 'system') return [{ role: 'system', content: anthropicContentText(message.content, PARAGRAPH) }];
  const role = message.role === 'assistant' ? 'assistant' : 'user';
  if (typeof message.content === 'string') return [{ role, content: message.content }];
  const blocks = readArray(message.content).filter(isRecord);
  return role === 'assistant' ? [assistantMessage(blocks)] : userMessages(blocks);
}

/**
 * Tool results become `tool` messages ahead of the user's own text. OpenAI tool messages hold
 * text only, so images inside a tool result move into the user message that follows.
 */
function userMessages(blocks: ReadonlyArray<Record<string, unknown>>): OpenAIMessage[] {
  const toolMessages: OpenAIMessage[] = [];
  const parts: OpenAIContentPart[] = [];
  for (const block of blocks) {
    if (block.type === 'tool_result') {
      toolMessages.push({ role: 'tool', tool_call_id: readString(block.tool_use_id) ?? '', content: anthropicContentText(block.content, PARAGRAPH) });
      parts.push(
        ...readArray(block.content)
          .filter(isRecord)
          .filter((inner) => inner.type === 'image')
          .flatMap(userPart),
      );
    } else {
      parts.push(...userPart(block));
    }
  }
  if (parts.length === 0) return toolMessages;
  const onlyText = parts.every((part) => part.type === 'text');
  const content = onlyText ? parts.map((part) => readString(part.text) ?? '').join(PARAGRAPH) : parts;
  return [...toolMessages, { role: 'user', content }];
}

/** Text, images and documents; thinking and server-tool blocks have no OpenAI form. */
function userPart(block: Record<string, unknown>): OpenAIContentPart[] {
  switch (block.type) {
    case 'text':
      return [{ type: 'text', text: readString(block.text) ?? '' }];
    case 'image': {
      const url = imageSourceToUrl(block.source);
      return url === undefined ? [] : [{ type: 'image_url', image_url: { url } }];
    }
    case 'document':
      return documentPart(block);
    default:
      return [];
  }
}

/** Plain-text documents become text; base64 ones (PDF) a file part. URL documents have no OpenAI chat form. */
function documentPart(block: Record<string, unknown>): OpenAIContentPart[] {
  const source = isRecord(block.source) ? block.source : {};
  const text = source.type === 'text' ? readString(source.data) : undefined;
  if (text !== undefined) return [{ type: 'text', text }];
  const fileData = source.type === 'base64' ? imageSourceToUrl(source) : undefined;
  if (fileData === undefined) return [];
  const file: Record<string, unknown> = { file_data: fileData };
  const title = readString(block.title);
  if (title !== undefined) file.filename = title;
  return [{ type: 'file', file }];
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
