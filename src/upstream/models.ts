import type { UpstreamTarget } from '../config/index.js';
import type { ApiFormat } from '../types/index.js';
import { endpointPath, jsonHeaders, type ClientCredentials } from './endpoint.js';
import { simpleRequest } from './http.js';

export interface ModelList {
  status: number;
  body: string;
  /** Where the list came from: the upstream itself, or the proxy's own configuration. */
  source: 'upstream' | 'configured';
}

interface ModelEntry {
  id: string;
  created?: number;
  ownedBy?: string;
  displayName?: string;
}

/**
 * `GET /v1/models` in the client's format. The upstream's own list when it has one (translated
 * between formats); when it has none (404, unreachable), the configured model; 401/403 pass through.
 */
export async function listModels(
  target: UpstreamTarget,
  credentials: ClientCredentials,
  clientFormat: ApiFormat,
  fallbackModel: string,
  timeoutMs: number,
): Promise<ModelList> {
  try {
    const { status, text } = await fetchUpstreamList(target, credentials, timeoutMs);
    if (status === 401 || status === 403) return { status, body: text, source: 'upstream' };
    if (status >= 200 && status < 300) {
      const entries = parseEntries(target.format, text);
      if (entries) return { status: 200, body: render(clientFormat, entries), source: 'upstream' };
    }
  } catch {
    // unreachable or slow: fall back to the configured model below
  }
  const id = target.model ?? fallbackModel;
  return { status: 200, body: render(clientFormat, [{ id, ownedBy: 'metaclaw' }]), source: 'configured' };
}

export function fetchUpstreamList(target: UpstreamTarget, credentials: ClientCredentials, timeoutMs: number): Promise<{ status: number; text: string }> {
  return simpleRequest(endpointPath(target, 'models'), 'GET', jsonHeaders(target, credentials), undefined, timeoutMs);
}

export function parseEntries(format: ApiFormat, text: string): ModelEntry[] | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return undefined;
  }
  const data = (parsed as { data?: unknown }).data;
  if (!Array.isArray(data)) return undefined;
  const entries: ModelEntry[] = [];
  for (const item of data) {
    if (typeof item !== 'object' || item === null || typeof (item as { id?: unknown }).id !== 'string') continue;
    const record = item as Record<string, unknown>;
    const entry: ModelEntry = { id: record['id'] as string };
    if (format === 'openai') {
      if (typeof record['created'] === 'number') entry.created = record['created'];
      if (typeof record['owned_by'] === 'string') entry.ownedBy = record['owned_by'];
    } else {
      if (typeof record['created_at'] === 'string') entry.created = Math.floor(Date.parse(record['created_at']) / 1000) || 0;
      if (typeof record['display_name'] === 'string') entry.displayName = record['display_name'];
    }
    entries.push(entry);
  }
  return entries;
}

function render(format: ApiFormat, entries: ModelEntry[]): string {
  if (format === 'openai') {
    return JSON.stringify({
      object: 'list',
      data: entries.map((entry) => ({ id: entry.id, object: 'model', created: entry.created ?? 0, owned_by: entry.ownedBy ?? 'upstream' })),
    });
  }
  const data = entries.map((entry) => ({
    type: 'model',
    id: entry.id,
    display_name: entry.displayName ?? entry.id,
    created_at: new Date((entry.created ?? 0) * 1000).toISOString(),
  }));
  return JSON.stringify({ data, has_more: false, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null });
}
