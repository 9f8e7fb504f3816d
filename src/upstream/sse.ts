import { StringDecoder } from 'node:string_decoder';

/** One server-sent event: `event` is undefined for unnamed events (the OpenAI style). */
export interface SseEvent {
  event: string | undefined;
  data: string;
}

/**
 * Incremental SSE parser (WHATWG rules): accepts chunks split anywhere, including inside a UTF-8
 * character or between `\r` and `\n`, and yields complete events only.
 */
export class SseParser {
  private readonly decoder = new StringDecoder('utf8');
  private buffer = '';
  private eventName: string | undefined;
  private dataLines: string[] = [];

  push(chunk: Buffer | string): SseEvent[] {
    this.buffer += typeof chunk === 'string' ? chunk : this.decoder.write(chunk);
    return this.drain(false);
  }

  /** Flushes a final event that was not followed by a blank line. */
  end(): SseEvent[] {
    this.buffer += this.decoder.end();
    const events = this.drain(true);
    if (this.dataLines.length > 0) events.push(this.dispatch());
    return events;
  }

  private drain(final: boolean): SseEvent[] {
    const events: SseEvent[] = [];
    let start = 0;
    const text = this.buffer;
    for (let index = 0; index < text.length; index++) {
      const code = text.charCodeAt(index);
      if (code !== 10 && code !== 13) continue;
      if (code === 13 && index + 1 === text.length && !final) break; // wait: \r may be followed by \n
      const line = text.slice(start, index);
      if (code === 13 && text.charCodeAt(index + 1) === 10) index++;
      start = index + 1;
      const event = this.processLine(line);
      if (event) events.push(event);
    }
    this.buffer = text.slice(start);
    if (final && this.buffer.length > 0) {
      const event = this.processLine(this.buffer);
      this.buffer = '';
      if (event) events.push(event);
    }
    return events;
  }

  private processLine(line: string): SseEvent | undefined {
    if (line === '') return this.dataLines.length > 0 || this.eventName !== undefined ? this.dispatch() : undefined;
    if (line.charCodeAt(0) === 58) return undefined; // ":" comment / keep-alive
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.charCodeAt(0) === 32) value = value.slice(1);
    if (field === 'data') this.dataLines.push(value);
    else if (field === 'event') this.eventName = value;
    return undefined;
  }

  private dispatch(): SseEvent {
    const event: SseEvent = { event: this.eventName, data: this.dataLines.join('\n') };
    this.eventName = undefined;
    this.dataLines = [];
    return event;
  }
}

/** Encodes one event; data lines are split so a newline inside data cannot break framing. */
export function encodeSse(data: string, event?: string): string {
  const head = event === undefined ? '' : `event: ${event.replace(/[\r\n]/g, '')}\n`;
  if (!data.includes('\n') && !data.includes('\r')) return `${head}data: ${data}\n\n`;
  return `${head}${data.split(/\r\n|\r|\n/).map((line) => `data: ${line}`).join('\n')}\n\n`;
}

/**
 * Index just past the last complete event in `buffer` (after a blank line), or 0 when none is
 * complete yet. Used to relay whole events only, so an error event can always be appended cleanly.
 */
export function completeEventsLength(buffer: Buffer): number {
  for (let index = buffer.length - 1; index >= 1; index--) {
    if (buffer[index] !== 10) continue;
    const before = buffer[index - 1];
    if (before === 10) return index + 1;
    if (before === 13 && index >= 2 && buffer[index - 2] === 10) return index + 1;
  }
  return 0;
}
