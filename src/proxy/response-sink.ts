import type { OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { ClientSink } from '../upstream/index.js';

/** Called just before the last bytes of an answer go out, with all the client was sent (it must not throw). */
export type BeforeLastBytes = (status: number, answer: readonly Buffer[]) => void;

/** The client's HTTP response as upstream/ sees it: committed once headers go out, closed if the client left. */
export class ResponseSink implements ClientSink {
  private clientGone = false;
  private readonly closeCallbacks: Array<() => void> = [];
  private streamStatus = 200;
  /** What a stream sent so far, kept only for `beforeLastBytes` (references, not copies). */
  private readonly sent: Array<string | Buffer> | undefined;

  constructor(
    private readonly response: ServerResponse,
    private readonly requestId: string,
    private readonly beforeLastBytes?: BeforeLastBytes,
  ) {
    if (beforeLastBytes) this.sent = [];
    response.on('close', () => {
      if (response.writableFinished) return;
      this.clientGone = true;
      for (const callback of this.closeCallbacks.splice(0)) callback();
    });
  }

  get closed(): boolean {
    return this.clientGone;
  }

  get committed(): boolean {
    return this.response.headersSent;
  }

  /**
   * Every write is guarded: a second answer, or a write after the end or after the client left,
   * is dropped instead of throwing out of an event handler (which would end the process).
   */
  private get writable(): boolean {
    return !this.response.writableEnded && !this.response.destroyed;
  }

  sendComplete(status: number, contentType: string, body: string | Buffer, headers?: OutgoingHttpHeaders): void {
    if (this.response.headersSent || !this.writable) return;
    this.beforeLastBytes?.(status, [toBuffer(body)]);
    this.response.writeHead(status, {
      ...headers,
      'content-type': contentType,
      'content-length': Buffer.byteLength(body),
      'x-metaclaw-request-id': this.requestId,
    });
    this.response.end(body);
  }

  startStream(status: number, contentType: string, headers?: OutgoingHttpHeaders): void {
    if (this.response.headersSent || !this.writable) return;
    this.streamStatus = status;
    this.response.writeHead(status, {
      ...headers,
      'content-type': contentType,
      'cache-control': 'no-cache',
      'x-accel-buffering': 'no',
      'x-metaclaw-request-id': this.requestId,
    });
  }

  write(chunk: string | Buffer): boolean {
    if (!this.writable) return true;
    this.sent?.push(chunk);
    return this.response.write(chunk);
  }

  onDrain(callback: () => void): void {
    this.response.once('drain', callback);
  }

  onClose(callback: () => void): void {
    if (this.clientGone) callback();
    else this.closeCallbacks.push(callback);
  }

  end(): void {
    if (!this.writable) return;
    if (this.sent) this.beforeLastBytes?.(this.streamStatus, this.sent.map(toBuffer));
    this.response.end();
  }
}

function toBuffer(chunk: string | Buffer): Buffer {
  return typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
}
