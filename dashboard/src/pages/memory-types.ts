import type { MemoryDetailView, MemoryListView } from '../../../src/dashboard/views.js';

/** What the memory page's data routes answer (src/dashboard/memory.ts). */
export type MemoryList = MemoryListView;
export type MemoryDetail = MemoryDetailView;
export type ShownMemory = MemoryDetailView['memory'];
export type BriefMemory = MemoryDetailView['supersedes'][number];

/** The memory API works in the caller's scope: the page names the unit's scope on every change. */
export function scopeHeader(scope: string): Record<string, string> {
  return { 'X-Memory-Scope': scope };
}

/** The list's address for a scope (and optionally a search), as the page keeps it in the hash. */
export function listLink(query: {
  scope?: string | null;
  q?: string;
  type?: string | null;
  superseded?: boolean;
  forgotten?: string;
  before?: string | null;
  limit?: number;
}): string {
  const params = new URLSearchParams();
  if (query.scope) params.set('scope', query.scope);
  if (query.q) params.set('q', query.q);
  if (query.type) params.set('type', query.type);
  if (query.superseded) params.set('superseded', '1');
  if (query.forgotten) params.set('forgotten', query.forgotten);
  if (query.before) params.set('before', query.before);
  if (query.limit) params.set('limit', String(query.limit));
  const text = params.toString();
  return text ? `#/memory?${text}` : '#/memory';
}
