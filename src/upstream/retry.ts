import type { IncomingHttpHeaders } from 'node:http';

/** Statuses worth another try: timeouts, conflicts, rate limits and server errors. */
export function isRetryableStatus(status: number): boolean {
  return status === 408 || status === 409 || status === 429 || status >= 500;
}

/** The wait an upstream asked for (`retry-after-ms`, `retry-after` seconds or date), in ms. */
export function retryAfterMs(headers: IncomingHttpHeaders, now = Date.now()): number | undefined {
  const milliseconds = headerValue(headers, 'retry-after-ms');
  if (milliseconds !== undefined && /^\d+(\.\d+)?$/.test(milliseconds)) return Math.ceil(Number(milliseconds));
  const value = headerValue(headers, 'retry-after');
  if (value === undefined) return undefined;
  if (/^\d+(\.\d+)?$/.test(value.trim())) return Math.ceil(Number(value) * 1000);
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

/** 0.5 s, 1 s, 2 s … capped at 8 s, minus up to 25 % jitter (openai-node's policy). */
export function backoffDelayMs(retry: number): number {
  const base = Math.min(8_000, 500 * 2 ** retry);
  return Math.round(base * (1 - Math.random() * 0.25));
}

function headerValue(headers: IncomingHttpHeaders, name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
}
