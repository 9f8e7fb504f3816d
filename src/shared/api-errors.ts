import type { ErrorKind } from '../errors.js';
import type { RequestFormat } from '../types/index.js';

/**
 * Error bodies in each client API's own shape, so every error the proxy produces is one the
 * client's SDK understands: OpenAI `{"error":{…}}` (the Responses API's too), Anthropic
 * `{"type":"error","error":{…}}`.
 */
export interface ApiErrorDescription {
  kind: ErrorKind;
  message: string;
  code?: string | null;
  param?: string | null;
}

export function errorBodyText(format: RequestFormat, error: ApiErrorDescription): string {
  if (format === 'anthropic') return JSON.stringify({ type: 'error', error: { type: anthropicType(error.kind), message: error.message } });
  return JSON.stringify({ error: openAIError(error) });
}

function openAIError(error: ApiErrorDescription) {
  return { message: error.message, type: openAIType(error.kind), param: error.param ?? null, code: error.code ?? null };
}

/** The SSE frame that ends a stream with an error; the SDKs raise it instead of hanging. */
export function streamErrorFrame(format: RequestFormat, error: ApiErrorDescription, sequenceNumber = 0): string {
  if (format === 'anthropic') return `event: error\ndata: ${errorBodyText('anthropic', error)}\n\n`;
  if (format === 'responses') return responsesErrorEvent(error, sequenceNumber);
  return `data: ${errorBodyText('openai', error)}\n\n`;
}

/**
 * The Responses API's `error` event. It also carries the error as an `error` object: that is what
 * makes the OpenAI SDK raise it from `responses.create({stream: true})` as from `responses.stream()`.
 */
function responsesErrorEvent(error: ApiErrorDescription, sequenceNumber: number): string {
  const body = openAIError(error);
  const event = { type: 'error', sequence_number: sequenceNumber, code: body.code ?? body.type, message: body.message, param: body.param, error: body };
  return `event: error\ndata: ${JSON.stringify(event)}\n\n`;
}

export function kindForStatus(status: number): ErrorKind {
  if (status === 400 || status === 422) return 'invalid_request_error';
  if (status === 401) return 'authentication_error';
  if (status === 403) return 'permission_error';
  if (status === 404) return 'not_found_error';
  if (status === 413) return 'request_too_large';
  if (status === 429) return 'rate_limit_error';
  if (status === 408 || status === 504) return 'timeout_error';
  if (status === 503 || status === 529) return 'overloaded_error';
  return 'api_error';
}

function anthropicType(kind: ErrorKind): string {
  return kind === 'timeout_error' ? 'api_error' : kind;
}

function openAIType(kind: ErrorKind): string {
  switch (kind) {
    case 'api_error':
    case 'overloaded_error':
    case 'timeout_error':
      return 'server_error';
    case 'rate_limit_error':
      return 'rate_limit_exceeded';
    default:
      return kind;
  }
}
