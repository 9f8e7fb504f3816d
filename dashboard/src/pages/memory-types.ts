/** What the memory page's data routes answer (src/dashboard/memory.ts). */

export interface ShownMemory {
  id: string;
  scope: string;
  type: string;
  content: string;
  core: boolean;
  pinned: boolean;
  status: 'active' | 'superseded';
  superseded_by: string | null;
  importance: number;
  confidence: number;
  origin: string;
  speaker: string | null;
  observed_at: string;
  created_at: string;
  updated_at: string;
  flagged: string | null;
  access_count: number;
  source: { session_id: string | null; turn_ids: string[] };
}

export interface MemoryList {
  scopes: Array<{ scope: string; active: number; superseded: number }>;
  scope: string | null;
  q: string;
  type: string | null;
  superseded: boolean;
  types: string[];
  limit: number;
  results: Array<ShownMemory & { score: number | null }>;
}

export interface BriefMemory {
  id: string;
  type: string;
  status: string;
  content: string;
  created_at: string;
}

export interface MemoryDetail {
  memory: ShownMemory;
  types: string[];
  superseded_by: { id: string; unit: BriefMemory | null } | null;
  supersedes: BriefMemory[];
  source: {
    session_id: string | null;
    session_recorded: boolean;
    turns: Array<{ id: string; session_id: string | null; seq: number | null; started_at: string | null; query: string | null; recorded: boolean }>;
    more_turns: number;
  };
}

/** The memory API works in the caller's scope: the page names the unit's scope on every change. */
export function scopeHeader(scope: string): Record<string, string> {
  return { 'X-Memory-Scope': scope };
}

/** The list's address for a scope (and optionally a search), as the page keeps it in the hash. */
export function listLink(query: { scope?: string | null; q?: string; type?: string | null; superseded?: boolean; forgotten?: string }): string {
  const params = new URLSearchParams();
  if (query.scope) params.set('scope', query.scope);
  if (query.q) params.set('q', query.q);
  if (query.type) params.set('type', query.type);
  if (query.superseded) params.set('superseded', '1');
  if (query.forgotten) params.set('forgotten', query.forgotten);
  const text = params.toString();
  return text ? `#/memory?${text}` : '#/memory';
}
