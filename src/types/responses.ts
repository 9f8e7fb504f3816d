/**
 * The subset of OpenAI's Responses API wire format the proxy reads or writes. Objects are open so
 * fields the proxy does not know pass through untouched.
 */

export interface ResponsesRequest {
  model?: string;
  /** A user message as text, or a list of items (messages, function calls and their outputs, reasoning, …). */
  input?: string | Array<Record<string, unknown>>;
  instructions?: string | null;
  previous_response_id?: string | null;
  stream?: boolean | null;
  tools?: Array<{ type: string; [key: string]: unknown }>;
  tool_choice?: string | { type: string; [key: string]: unknown };
  max_output_tokens?: number | null;
  temperature?: number | null;
  top_p?: number | null;
  [key: string]: unknown;
}

export interface ResponsesOutputText {
  type: 'output_text';
  text: string;
  annotations: unknown[];
  logprobs?: unknown[];
}

export type ResponsesOutputItem =
  | { type: 'message'; id: string; status: string; role: 'assistant'; content: Array<ResponsesOutputText | { type: 'refusal'; refusal: string }> }
  | { type: 'function_call'; id: string; call_id: string; name: string; namespace?: string; arguments: string; status: string }
  | { type: 'custom_tool_call'; id: string; call_id: string; name: string; namespace?: string; input: string }
  | { type: 'reasoning'; id: string; summary: unknown[]; content?: Array<{ type: 'reasoning_text'; text: string }>; [key: string]: unknown };

export interface ResponsesUsage {
  input_tokens: number;
  input_tokens_details: { cached_tokens: number };
  output_tokens: number;
  output_tokens_details: { reasoning_tokens: number };
  total_tokens: number;
}

export type ResponsesStatus = 'completed' | 'incomplete' | 'failed' | 'in_progress';

export interface ResponsesObject {
  id: string;
  object: 'response';
  created_at: number;
  status: ResponsesStatus;
  model: string;
  output: ResponsesOutputItem[];
  usage: ResponsesUsage | null;
  error: { code: string; message: string } | null;
  incomplete_details: { reason: string } | null;
  [key: string]: unknown;
}
