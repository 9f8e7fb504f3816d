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

/** Every event of a whole stream's bytes, the last one counted without its blank line. */
export function eventsOf(bytes: Buffer): SseEvent[] {
  const parser = new SseParser();
  return [...parser.push(bytes), ...parser.end()];
}

/** Encodes one event; data lines are split so a newline inside data cannot break framing. */
export function encodeSse(data: string, event?: string): string {
  const head = event === undefined ? '' : `event: ${event.replace(/[\r\n]/g, '')}\n`;
  if (!data.includes('\n') && !data.includes('\r')) return `${head}data: ${data}\n\n`;
  return `${head}${data
    .split(/\r\n|\r|\n/)
    .map((line) => `data: ${line}`)
    .join('\n')}\n\n`;
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

const SPACE = 32;
const TAB = 9;
const OPEN_BRACE = 123;
const CLOSE_BRACE = 125;
const OPEN_BRACKET = 91;
const CLOSE_BRACKET = 93;

/**
 * Offset of the first event in `buffer[0, end)` whose data cannot be JSON (nor `[DONE]`), or -1.
 * Every model API streams JSON objects, so data that does not open and close like one is a broken
 * upstream; relayed as is, it made the client's SDK throw a parse error of its own. A byte scan, no
 * parsing: it runs on every chunk of every relayed stream. With `final`, a last event without its
 * blank line is judged too.
 */
export function firstMalformedEvent(buffer: Buffer, end: number, final = false): number {
  let eventStart = 0;
  let lineStart = 0;
  let first = -1;
  let last = -1;
  const judge = (): boolean => first === -1 || (first === OPEN_BRACE && last === CLOSE_BRACE) || (first === OPEN_BRACKET && last === CLOSE_BRACKET);
  for (let index = 0; index <= end; index++) {
    const atEnd = index === end;
    if (!atEnd && buffer[index] !== 10) continue;
    if (atEnd && (!final || lineStart >= end)) break;
    let lineEnd = index;
    if (lineEnd > lineStart && buffer[lineEnd - 1] === 13) lineEnd--;
    if (lineEnd === lineStart) {
      if (!judge()) return eventStart;
      eventStart = index + 1;
      first = -1;
      last = -1;
    } else if (
      lineEnd - lineStart >= 5 &&
      buffer[lineStart] === 100 &&
      buffer[lineStart + 1] === 97 &&
      buffer[lineStart + 2] === 116 &&
      buffer[lineStart + 3] === 97 &&
      buffer[lineStart + 4] === 58
    ) {
      // "data:": its value, trimmed
      let start = lineStart + 5;
      let stop = lineEnd;
      while (start < stop && (buffer[start] === SPACE || buffer[start] === TAB)) start++;
      while (stop > start && (buffer[stop - 1] === SPACE || buffer[stop - 1] === TAB)) stop--;
      if (start < stop) {
        if (first === -1) first = buffer[start]!;
        last = buffer[stop - 1]!;
      }
    }
    lineStart = index + 1;
  }
  if (final && !judge()) return eventStart;
  return -1;
}

/** Whether one parsed event's data is JSON (or `[DONE]`, or nothing). */
export function isWellFormedEvent(event: SseEvent): boolean {
  const data = event.data.trim();
  if (data === '' || data === '[DONE]') return true;
  try {
    JSON.parse(data);
    return true;
  } catch {
    return false;
  }
}
