/**
 * Text an upstream wrote, with the keys MetaClaw sent it replaced by `[redacted]`. Some servers echo
 * the key they refuse ("Incorrect API key provided: sk-…"), and their words go into the log, a job's
 * stored error, and setup's and doctor's output. Keys under 8 characters are left alone: replacing
 * them would garble ordinary words.
 */
export function withoutKeys(text: string, keys: ReadonlyArray<string | undefined>): string {
  let shown = text;
  for (const key of keys) if (key && key.length >= 8) shown = shown.replaceAll(key, '[redacted]');
  return shown;
}

/** The keys in a request's auth headers (`Authorization: Bearer …`, `x-api-key`). */
export function keysOfHeaders(headers: Record<string, string>): string[] {
  const keys: string[] = [];
  const authorization = headers['authorization'];
  if (authorization) keys.push(authorization.replace(/^Bearer\s+/i, ''));
  if (headers['x-api-key']) keys.push(headers['x-api-key']);
  return keys;
}
