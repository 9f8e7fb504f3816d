import type { OutgoingHttpHeaders } from 'node:http';

/** Where a forwarded answer goes: the client's response, as the proxy exposes it to upstream/. */
export interface ClientSink {
  /** The client went away; stop sending. */
  readonly closed: boolean;
  /** Status and headers are out: from here on there is no retry and no failover. */
  readonly committed: boolean;
  /** `headers`: the upstream's headers the client is owed (request id, rate limits), sent beside the proxy's own. */
  sendComplete(status: number, contentType: string, body: string | Buffer, headers?: OutgoingHttpHeaders): void;
  startStream(status: number, contentType: string, headers?: OutgoingHttpHeaders): void;
  /** Returns false when the client's buffer is full; wait for `onDrain` before writing more. */
  write(chunk: string | Buffer): boolean;
  onDrain(callback: () => void): void;
  onClose(callback: () => void): void;
  end(): void;
}
