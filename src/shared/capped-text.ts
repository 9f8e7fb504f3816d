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
  const reader: ReadableStreamDefaultReader<Uint8Array> = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return Buffer.concat(chunks).toString('utf8');
    size += value.byteLength;
    if (size > limitBytes) {
      // Cancelling the body closes the connection: the rest is never read.
      await reader.cancel().catch(() => undefined);
      throw new AnswerTooLargeError(limitBytes);
    }
    chunks.push(value);
  }
}
