import type { AnthropicErrorBody, OpenAIErrorBody } from '../../types/index.js';
import { isRecord, parseJson, readString } from './common.js';

/** Upstream error bodies rewritten into the client's API shape, keeping the upstream's message. */

const MAX_TEXT_MESSAGE = 2000;

/** Anthropic's error types; OpenAI bodies use the same words except for server errors. */
const ANTHROPIC_TYPES = new Set([
  'invalid_request_error',
  'authentication_error',
  'permission_error',
  'not_found_error',
  'request_too_large',
  'rate_limit_error',
  'api_error',
  'overloaded_error',
  'timeout_error',
]);

const TYPE_BY_STATUS: Readonly<Record<number, string>> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  403: 'permission_error',
  404: 'not_found_error',
  413: 'request_too_large',
  429: 'rate_limit_error',
  500: 'api_error',
  503: 'overloaded_error',
  529: 'overloaded_error',
};

function anthropicTypeForStatus(status: number): string {
  return TYPE_BY_STATUS[status] ?? (status >= 400 && status < 500 ? 'invalid_request_error' : 'api_error');
}

/** OpenAI words: `server_error` stands for every 5xx kind. */
function openAITypeFor(anthropicType: string, status: number): string {
  const serverSide = status >= 500 || anthropicType === 'api_error' || anthropicType === 'overloaded_error';
  return serverSide ? 'server_error' : anthropicType;
}

interface UpstreamError {
  message: string;
  type: string | undefined;
  code: string | undefined;
  param: string | undefined;
}

/**
 * Reads `{error: {message, type, code, param}}` (OpenAI), `{type: 'error', error: {...}}`
 * (Anthropic), `{error: 'text'}`, `{message}` and `{detail}` (FastAPI servers); anything else is
 * the body text itself.
 */
function readUpstreamError(bodyText: string, status: number): UpstreamError {
  const body = parseJson(bodyText);
  const inner = isRecord(body) && isRecord(body.error) ? body.error : undefined;
  const candidates = [
    inner?.message,
    isRecord(body) ? body.error : undefined,
    isRecord(body) ? body.message : undefined,
    isRecord(body) ? body.detail : undefined,
  ];
  const fromJson = candidates.find((candidate): candidate is string => typeof candidate === 'string' && candidate !== '');
  const text = bodyText.trim() === '' ? `Upstream returned HTTP ${status}` : bodyText.slice(0, MAX_TEXT_MESSAGE);
  return { message: fromJson ?? text, type: readString(inner?.type), code: readString(inner?.code), param: readString(inner?.param) };
}

export function openAIErrorBodyToAnthropic(bodyText: string, status: number): string {
  const error = readUpstreamError(bodyText, status);
  const byStatus = anthropicTypeForStatus(status);
  // OpenAI files a rejected key (401), an unknown model (404) and more under its catch-all
  // invalid_request_error, where Anthropic's API (and code that switches on the type) says what it was.
  const generic = error.type === 'invalid_request_error' && status < 500;
  const type = error.type !== undefined && ANTHROPIC_TYPES.has(error.type) && !generic ? error.type : byStatus;
  const body: AnthropicErrorBody = { type: 'error', error: { type, message: error.message } };
  return JSON.stringify(body);
}

export function anthropicErrorBodyToOpenAI(bodyText: string, status: number): string {
  const error = readUpstreamError(bodyText, status);
  const anthropicType = error.type !== undefined && ANTHROPIC_TYPES.has(error.type) ? error.type : anthropicTypeForStatus(status);
  const code = error.code ?? (status === 429 ? 'rate_limit_exceeded' : null);
  const body: OpenAIErrorBody = { error: { message: error.message, type: openAITypeFor(anthropicType, status), param: error.param ?? null, code } };
  return JSON.stringify(body);
}
