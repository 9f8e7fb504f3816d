/** Small HTTP helpers for CLI commands that talk to a running proxy. */

export interface ProxyCall {
  status: number;
  body: unknown;
}

export async function getJson(url: string, options: { apiKey?: string; timeoutMs?: number } = {}): Promise<ProxyCall> {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (options.apiKey) headers['authorization'] = `Bearer ${options.apiKey}`;
  const response = await fetch(url, { headers, signal: AbortSignal.timeout(options.timeoutMs ?? 2_000) });
  const text = await response.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // keep the text
  }
  return { status: response.status, body };
}

/** True when `/healthz` answers `{ok: true}`. */
export async function isHealthy(base: string, timeoutMs = 1_000): Promise<boolean> {
  try {
    const result = await getJson(`${base}/healthz`, { timeoutMs });
    return result.status === 200 && (result.body as { ok?: unknown })?.ok === true;
  } catch {
    return false;
  }
}
