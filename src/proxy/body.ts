import type { IncomingMessage } from 'node:http';
import { BadRequestError, PayloadTooLargeError } from '../errors.js';

/** Reads the request body, refusing (413) anything over the limit before it is all in memory. */
export function readRequestBody(request: IncomingMessage, limitBytes: number): Promise<Buffer> {
  const declared = Number(request.headers['content-length']);
  if (Number.isFinite(declared) && declared > limitBytes) {
    request.resume(); // drain so the connection can answer
    return Promise.reject(new PayloadTooLargeError(limitBytes));
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let failed = false;
    request.on('data', (chunk: Buffer) => {
      if (failed) return;
      size += chunk.length;
      if (size > limitBytes) {
        failed = true;
        reject(new PayloadTooLargeError(limitBytes));
        return;
      }
      chunks.push(chunk);
    });
    request.on('end', () => {
      if (!failed) resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks));
    });
    request.on('error', (error) => {
      if (!failed) reject(error);
    });
  });
}

/** Parses a request body as JSON; invalid JSON is a 400 that says why. */
export function parseJsonBody(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new BadRequestError('invalid_json', `The request body is not valid JSON: ${(error as Error).message}`);
  }
}

/** Parses a JSON object body; anything else is a 400 that names the problem. */
export function parseJsonObject(raw: Buffer): Record<string, unknown> {
  if (raw.length === 0) throw new BadRequestError('invalid_json', 'The request body is empty; expected a JSON object.');
  const value = parseJsonBody(raw.toString('utf8'));
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new BadRequestError('invalid_json', 'The request body must be a JSON object.');
  }
  return value as Record<string, unknown>;
}
