import http from 'node:http';
import https from 'node:https';
import { pipeline, type Readable } from 'node:stream';
import { urlToHttpOptions } from 'node:url';
import { contentDecoder } from '../shared/content-coding.js';

/**
 * Keep-alive agents for upstream calls. node:http requests cost about a quarter of what `fetch`
 * costs per streamed request here, which is most of the proxy's own overhead.
 */
const httpAgent = new http.Agent({ keepAlive: true, keepAliveMsecs: 10_000, maxSockets: Infinity, maxFreeSockets: 256, scheduling: 'lifo' });
const httpsAgent = new https.Agent({ keepAlive: true, keepAliveMsecs: 10_000, maxSockets: Infinity, maxFreeSockets: 256, scheduling: 'lifo' });

/** Request options derived from each URL once (an upstream URL is reused for every request). */
const baseOptions = new WeakMap<URL, http.RequestOptions>();

export function requestUpstream(url: URL, options: { method: string; headers: http.OutgoingHttpHeaders }): http.ClientRequest {
  const isHttps = url.protocol === 'https:';
  let base = baseOptions.get(url);
  if (!base) {
    base = { ...urlToHttpOptions(url), agent: isHttps ? httpsAgent : httpAgent };
    baseOptions.set(url, base);
  }
  return (isHttps ? https : http).request({ ...base, method: options.method, headers: options.headers });
}

/** An upstream's answer as the proxy reads it: status, headers and its body, decoded. */
export type UpstreamAnswer = Readable & Pick<http.IncomingMessage, 'headers' | 'statusCode' | 'complete'>;

/**
 * The answer with its body decoded when the upstream compressed it anyway: the proxy asks for
 * `accept-encoding: identity`, but a server or CDN that gzips regardless sent the client compressed
 * bytes under no content-encoding (garbage to the SDK) and the turn record nothing it could parse.
 * Destroying the decoded stream ends the response too (pipeline). An encoding zlib does not know is
 * left as it came (`undecodedCoding` names it).
 */
export function decodedAnswer(response: http.IncomingMessage): UpstreamAnswer {
  const decoder = contentDecoder(headerValue(response.headers['content-encoding']));
  if (!decoder) return response;
  pipeline(response, decoder, () => undefined);
  const headers = { ...response.headers };
  delete headers['content-encoding'];
  delete headers['content-length'];
  const answer = Object.assign(decoder, { headers, statusCode: response.statusCode, complete: false });
  // Whole once the decoder has given out its end, as a message is once its last byte came.
  answer.once('end', () => {
    answer.complete = true;
  });
  return answer;
}

/**
 * The content coding an answer still has after `decodedAnswer` (one zlib does not know, such as
 * zstd); undefined when its body is plain.
 */
export function undecodedCoding(answer: UpstreamAnswer): string | undefined {
  const coding = headerValue(answer.headers['content-encoding'])?.trim().toLowerCase();
  return coding === undefined || coding === '' || coding === 'identity' ? undefined : coding;
}

function headerValue(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value.join(',') : value;
}

/** Reads a whole (small) response body, up to `limitBytes`. */
export function readResponseBody(response: Readable, limitBytes = 32 * 1024 * 1024): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let ended = false;
    response.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > limitBytes) {
        response.destroy(new Error(`upstream response larger than ${limitBytes} bytes`));
        return;
      }
      chunks.push(chunk);
    });
    response.on('end', () => {
      ended = true;
      resolve(Buffer.concat(chunks));
    });
    response.on('error', reject);
    response.on('close', () => {
      if (!ended) reject(new Error('upstream connection closed before the response was complete'));
    });
  });
}

/** A whole request and response with a timeout (for probes and model lists, not the relay). */
export function simpleRequest(
  url: string,
  method: string,
  headers: http.OutgoingHttpHeaders,
  body: string | undefined,
  timeoutMs: number,
): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      reject(new Error(`invalid URL ${url}`));
      return;
    }
    const request = requestUpstream(parsed, { method, headers: body ? { ...headers, 'content-length': Buffer.byteLength(body) } : headers });
    const timer = setTimeout(() => request.destroy(new Error(`no answer within ${timeoutMs / 1000} s`)), timeoutMs);
    request.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    request.on('response', (raw) => {
      const response = decodedAnswer(raw);
      readResponseBody(response, 4 * 1024 * 1024).then(
        (buffer) => {
          clearTimeout(timer);
          resolve({ status: response.statusCode ?? 0, text: buffer.toString('utf8') });
        },
        (error: Error) => {
          clearTimeout(timer);
          reject(error);
        },
      );
    });
    request.end(body);
  });
}
