/** An answer larger than its reader allows: the connection was dropped, the rest never read. */
export class AnswerTooLargeError extends Error {
  constructor(readonly limitBytes: number) {
    super(`answered more than ${Math.round(limitBytes / 1024 / 1024)} MB; the answer was dropped`);
  }
}

/**
 * A fetch answer's text, read to `limitBytes` at most. A body read whole with `text()` grows until
 * the call's timeout: from a server that never ends it (at local speeds hundreds of MB a second)
 * that is enough to end the process.
 */
export async function cappedText(response: Response, limitBytes: number): Promise<string> {
  if (!response.body) return '';
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of response.body as AsyncIterable<Uint8Array>) {
    size += chunk.byteLength;
    // Leaving the loop cancels the body: the connection is closed.
    if (size > limitBytes) throw new AnswerTooLargeError(limitBytes);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}
