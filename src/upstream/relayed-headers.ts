import type { IncomingHttpHeaders, OutgoingHttpHeaders } from 'node:http';

/**
 * The upstream's headers a client is owed on every answer, as a gateway passes them: its request id
 * (what its support asks for; the SDKs expose it) and its rate limits (what a client paces itself
 * by). Copied as they are, also when the answer is translated to the other API's format.
 */
const RELAYED_NAMES = new Set(['x-request-id', 'request-id', 'retry-after', 'retry-after-ms']);
const RELAYED_PREFIXES = ['x-ratelimit-', 'anthropic-ratelimit-'] as const;

/** The relayed headers of an upstream answer; undefined when it has none (no allocation). */
export function relayedHeaders(headers: IncomingHttpHeaders): OutgoingHttpHeaders | undefined {
  let kept: OutgoingHttpHeaders | undefined;
  for (const name in headers) {
    if (RELAYED_NAMES.has(name) || name.startsWith(RELAYED_PREFIXES[0]) || name.startsWith(RELAYED_PREFIXES[1])) (kept ??= {})[name] = headers[name];
  }
  return kept;
}

/**
 * The headers of the error a client gets once the proxy's own retries are spent: the last answer's
 * (its retry-after among them) and `x-should-retry: false`, which the OpenAI and Anthropic SDKs
 * obey, so their retries do not multiply the proxy's.
 */
export function finalErrorHeaders(relayed: OutgoingHttpHeaders | undefined): OutgoingHttpHeaders {
  return { ...relayed, 'x-should-retry': 'false' };
}
