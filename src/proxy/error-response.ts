import type { IncomingHttpHeaders, ServerResponse } from 'node:http';
import { RequestError } from '../errors.js';
import { errorBodyText } from '../shared/api-errors.js';
import type { ApiFormat, RequestFormat } from '../types/index.js';

/** Writes a proxy error in the client API's own error shape (if nothing was sent yet). */
export function sendError(response: ServerResponse, format: RequestFormat, error: unknown, requestId?: string): void {
  if (response.headersSent || response.destroyed) {
    if (!response.writableEnded) response.end();
    return;
  }
  const known = error instanceof RequestError ? error : undefined;
  const status = known?.status ?? 500;
  const body = errorBodyText(format, {
    kind: known?.kind ?? 'api_error',
    message: known?.message ?? 'Internal proxy error.',
    code: known?.code ?? 'internal_error',
    param: known?.param ?? null,
  });
  const headers: Record<string, string | number> = { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) };
  if (requestId) headers['x-metaclaw-request-id'] = requestId;
  response.writeHead(status, headers);
  response.end(body);
}

/** Non-model routes answer in Anthropic's shape when the client announces itself as an Anthropic client. */
export function formatForHeaders(headers: IncomingHttpHeaders): ApiFormat {
  return headers['anthropic-version'] !== undefined ? 'anthropic' : 'openai';
}
