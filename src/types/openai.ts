/**
 * The subset of OpenAI's Chat Completions wire format the proxy reads or writes. Every object is
 * open (`[key: string]: unknown`): fields the proxy does not know pass through untouched.
 */

export interface OpenAITextPart {
  type: 'text';
  text: string;
  [key: string]: unknown;
}

export interface OpenAIImagePart {
  type: 'image_url';
  image_url: { url: string; detail?: string };
  [key: string]: unknown;
}

export type OpenAIContentPart = OpenAITextPart | OpenAIImagePart | { type: string; [key: string]: unknown };

export interface OpenAIToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
  [key: string]: unknown;
}

export interface OpenAIMessage {
  role: 'system' | 'developer' | 'user' | 'assistant' | 'tool' | 'function';
  content?: string | OpenAIContentPart[] | null;
  name?: string;
  tool_calls?: OpenAIToolCall[];
  tool_call_id?: string;
  reasoning_content?: string;
  [key: string]: unknown;
}

export interface OpenAITool {
  type: 'function';
  function: { name: string; description?: string; parameters?: Record<string, unknown>; strict?: boolean };
  [key: string]: unknown;
}

export type OpenAIToolChoice = 'auto' | 'none' | 'required' | { type: 'function'; function: { name: string } };

export interface OpenAIChatRequest {
  model?: string;
  messages: OpenAIMessage[];
  stream?: boolean;
  stream_options?: { include_usage?: boolean; [key: string]: unknown };
  tools?: OpenAITool[];
  tool_choice?: OpenAIToolChoice;
  parallel_tool_calls?: boolean;
  max_tokens?: number;
  max_completion_tokens?: number;
  temperature?: number;
  top_p?: number;
  stop?: string | string[];
  user?: string;
  metadata?: Record<string, unknown>;
  [key: string]: unknown;
}

export interface OpenAIUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  prompt_tokens_details?: { cached_tokens?: number; [key: string]: unknown };
  [key: string]: unknown;
}

export interface OpenAIChatCompletion {
  id: string;
  object: 'chat.completion';
  created: number;
  model: string;
  choices: Array<{
    index: number;
    message: {
      role: 'assistant';
      content: string | null;
      tool_calls?: OpenAIToolCall[];
      reasoning_content?: string;
      refusal?: string | null;
      [key: string]: unknown;
    };
    finish_reason: string | null;
    logprobs?: unknown;
    [key: string]: unknown;
  }>;
  usage?: OpenAIUsage;
  [key: string]: unknown;
}

export interface OpenAIChunkToolCallDelta {
  index: number;
  id?: string;
  type?: 'function';
  function?: { name?: string; arguments?: string };
}

export interface OpenAIChatChunk {
  id: string;
  object: 'chat.completion.chunk';
  created: number;
  model: string;
  choices: Array<{
    index: number;
    delta: { role?: 'assistant'; content?: string | null; reasoning_content?: string; tool_calls?: OpenAIChunkToolCallDelta[]; [key: string]: unknown };
    finish_reason: string | null;
    [key: string]: unknown;
  }>;
  usage?: OpenAIUsage | null;
  [key: string]: unknown;
}

export interface OpenAIErrorBody {
  error: { message: string; type: string; param: string | null; code: string | null; [key: string]: unknown };
}
