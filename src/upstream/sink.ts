/** Where a forwarded answer goes: the client's response, as the proxy exposes it to upstream/. */
export interface ClientSink {
  /** The client went away; stop sending. */
  readonly closed: boolean;
  /** Status and headers are out: from here on there is no retry and no failover. */
  readonly committed: boolean;
  sendComplete(status: number, contentType: string, body: string | Buffer): void;
  startStream(status: number, contentType: string): void;
  /** Returns false when the client's buffer is full; wait for `onDrain` before writing more. */
  write(chunk: string | Buffer): boolean;
  onDrain(callback: () => void): void;
  onClose(callback: () => void): void;
  end(): void;
}
