import type { RequestFormat } from '../types/index.js';
import type { SseEvent } from './sse.js';
import { isRecord, parseJson, readString } from './translate/common.js';
import { decodeAnthropicEvent, decodeOpenAIEvent, errorMessage } from './translate/stream-events.js';

/**
 * An upstream may take a request (200, an event stream) and fail it in its very first event:
 * Anthropic's API sends `overloaded_error` so when it is busy, chat servers an error chunk. Before
 * the client has had a byte, such a failure is as worth retrying as a 529 or a 500 would have been;
 * after, it is the client's to see. Only errors that say the server, not the request, is at fault
 * are retried: an invalid request fails the same way every time.
 */
const TRANSIENT_KINDS = new Set(['overloaded_error', 'api_error', 'rate_limit_error', 'server_error', 'rate_limit_exceeded', 'overloaded', 'internal_error']);

/** Events that say nothing of the answer yet (Anthropic's keep-alive). */
const KEEP_ALIVE = new Set(['ping']);

/**
 * Why a stream's first events (keep-alives aside) are a transient failure of the upstream's, or
 * undefined when they begin an answer, are keep-alives only, or fail in a way that blames the request.
 */
export function transientOpening(format: RequestFormat, events: readonly SseEvent[]): string | undefined {
  const first = events.find((event) => event.event === undefined || !KEEP_ALIVE.has(event.event));
  const failure = first === undefined ? undefined : openingFailure(format, first);
  if (failure === undefined || !TRANSIENT_KINDS.has(failure.kind)) return undefined;
  return `the upstream failed its stream before any answer (${failure.kind}: ${failure.message})`;
}

/** The kind and message of an event that is an error in `format`'s stream (read as the stream readers read it), else undefined. */
function openingFailure(format: RequestFormat, event: SseEvent): { kind: string; message: string } | undefined {
  if (format !== 'responses') {
    const fact = format === 'anthropic' ? decodeAnthropicEvent(event) : decodeOpenAIEvent(event);
    return fact.type === 'error' ? fact : undefined;
  }
  const data = parseJson(event.data);
  if (!isRecord(data)) return undefined;
  const type = readString(data.type) ?? event.event;
  if (type === 'error') {
    const error = isRecord(data.error) ? data.error : undefined;
    return {
      kind: readString(data.code) ?? readString(error?.code) ?? readString(error?.type) ?? '',
      message: readString(data.message) ?? errorMessage(data.error),
    };
  }
  if (type !== 'response.failed') return undefined;
  const failed = isRecord(data.response) && isRecord(data.response.error) ? data.response.error : undefined;
  return { kind: readString(failed?.code) ?? '', message: errorMessage(failed) };
}
