export const MEMORY_TYPES = ['preference', 'semantic', 'project_state', 'episodic', 'procedural_observation', 'working_summary'] as const;
export type MemoryType = (typeof MEMORY_TYPES)[number];

/** The type of a unit added by hand (CLI, HTTP, MCP) that names none: a fact. */
export const DEFAULT_MEMORY_TYPE: MemoryType = 'semantic';

/** How a unit came to be. */
/**
 * The scope every caller reads beside their own (a team's shared facts and rules): recalled and
 * injected for every scope once it holds anything. Only the owner writes it (requests with the proxy
 * key and `X-Memory-Scope: team`, the admin token, the CLI); a member key can read it, never write it.
 */
export const SHARED_SCOPE = 'team';

export type MemoryOrigin = 'raw_turn' | 'extractor' | 'rule' | 'manual' | 'import' | 'summary' | 'consolidation';

export interface MemoryUnit {
  id: string;
  /** Insertion order (the row id): watermarks of what extraction has read. */
  sequence: number;
  scope: string;
  type: MemoryType;
  content: string;
  /** Index-only texts (never injected): the questions it answers, written by the extractor; a raw turn's speaker name. */
  searchKeys: string[];
  /** Raw turns: who said it. */
  speaker: 'user' | 'assistant' | null;
  importance: number;
  confidence: number;
  /** A standing instruction: injected on every main turn of the scope (core memory). */
  core: boolean;
  pinned: boolean;
  status: 'active' | 'superseded';
  supersededBy: string | null;
  origin: MemoryOrigin;
  /** When it was said (not when it was processed). */
  observedAt: number;
  validFrom: number;
  sourceSession: string | null;
  sourceTurns: string[];
  /** Why it is never injected (it looks like a prompt injection), or null. */
  flagged: string | null;
  accessCount: number;
  lastAccessedAt: number | null;
  createdAt: number;
  updatedAt: number;
}

/** What a writer supplies; the store fills in ids, timestamps and counters. */
export interface MemoryDraft {
  scope: string;
  type: MemoryType;
  content: string;
  searchKeys?: string[];
  speaker?: 'user' | 'assistant' | null;
  importance?: number;
  confidence?: number;
  core?: boolean;
  pinned?: boolean;
  origin: MemoryOrigin;
  observedAt?: number;
  sourceSession?: string | null;
  sourceTurns?: string[];
}

export interface MemoryHit {
  unit: MemoryUnit;
  score: number;
  /** Components of the score, for explanations. */
  relevance: number;
  recency: number;
  inWindow: boolean;
}
