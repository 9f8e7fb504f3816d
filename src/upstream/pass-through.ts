import type { IncomingHttpHeaders } from 'node:http';
import type { UpstreamTarget } from '../config/index.js';
import { errorMessage, UpstreamConnectionError } from '../errors.js';
import { authHeaders, endpointPath, versionHeaders, type ClientCredentials } from './endpoint.js';
import { decodedAnswer, readResponseBody, requestUpstream } from './http.js';

export interface PassedAnswer {
  status: number;
  contentType: string;
  body: Buffer;
}

/** Client headers that change what these endpoints do (Anthropic's betas); credentials never pass this way. */
const PASSED_HEADERS = ['anthropic-beta'];

/**
 * One JSON request passed to an upstream endpoint as it came (token counts, embeddings) and its
 * answer returned whole, errors included: no translation, no retries, nothing recorded.
 */
export function passThrough(
  target: UpstreamTarget,
  kind: 'count_tokens' | 'embeddings',
  body: Record<string, unknown>,
  clientHeaders: IncomingHttpHeaders,
  credentials: ClientCredentials,
  timeoutMs: number,
): Promise<PassedAnswer> {
  const text = JSON.stringify(body);
  const clientVersion = clientHeaders['anthropic-version'];
  const headers: Record<string, string | number> = {
    accept: 'application/json',
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
    ...versionHeaders(target, typeof clientVersion === 'string' ? clientVersion : undefined),
    ...authHeaders(target, credentials),
  };
  for (const name of PASSED_HEADERS) {
    const value = clientHeaders[name];
    if (typeof value === 'string') headers[name] = value;
  }
  const url = endpointPath(target, kind);
  return new Promise((resolve, reject) => {
    const fail = (error: unknown) => reject(new UpstreamConnectionError(`Could not get an answer from ${url} (${errorMessage(error)}).`, error));
    const request = requestUpstream(new URL(url), { method: 'POST', headers });
    const timer = setTimeout(() => request.destroy(new Error(`no answer within ${timeoutMs / 1000} s`)), timeoutMs);
    request.on('error', (error) => {
      clearTimeout(timer);
      fail(error);
    });
    request.on('response', (raw) => {
      const response = decodedAnswer(raw);
      readResponseBody(response).then(
        (answer) => {
          clearTimeout(timer);
          const contentType = response.headers['content-type'] ?? 'application/json';
          resolve({ status: response.statusCode ?? 502, contentType, body: answer });
        },
        (error: unknown) => {
          clearTimeout(timer);
          fail(error);
        },
      );
    });
    request.end(text);
  });
}
