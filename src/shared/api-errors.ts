import type { ErrorKind } from '../errors.js';
import type { ApiFormat } from '../types/index.js';

/**
 * Error bodies in each client API's own shape, so every error the proxy produces is one the
 * client's SDK understands: OpenAI `{"error":{…}}`, Anthropic `{"type":"error","error":{…}}`.
 */
export interface ApiErrorDescription {
  kind: ErrorKind;
  message: string;
  code?: string | null;
  param?: string | null;
}

export function errorBodyText(format: ApiFormat, error: ApiErrorDescription): string {
  if (format === 'anthropic') return JSON.stringify({ type: 'error', error: { type: anthropicType(error.kind), message: error.message } });
  return JSON.stringify({ error: { message: error.message, type: openAIType(error.kind), param: error.param ?? null, code: error.code ?? null } });
}

/** The SSE frame that ends a stream with an error; the SDKs raise it instead of hanging. */
export function streamErrorFrame(format: ApiFormat, error: ApiErrorDescription): string {
  if (format === 'anthropic') return `event: error\ndata: ${errorBodyText('anthropic', error)}\n\n`;
  return `data: ${errorBodyText('openai', error)}\n\n`;
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
