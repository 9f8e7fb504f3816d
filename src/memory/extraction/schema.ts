import { z } from 'zod';
import { MEMORY_TYPES } from '../types.js';

const TYPE_ALIASES: Record<string, (typeof MEMORY_TYPES)[number]> = {
  fact: 'semantic',
  facts: 'semantic',
  project: 'project_state',
  event: 'episodic',
  procedure: 'procedural_observation',
  procedural: 'procedural_observation',
  rule: 'preference',
  instruction: 'preference',
};

/** One candidate memory from the extractor. Tolerant of aliases; strict about what is stored. */
const candidateSchema = z.preprocess(
  (raw) => {
    if (typeof raw !== 'object' || raw === null) return raw;
    const record = { ...(raw as Record<string, unknown>) };
    if (typeof record['type'] === 'string') {
      const type = record['type'].toLowerCase().trim();
      record['type'] = TYPE_ALIASES[type] ?? type;
    }
    if (typeof record['action'] === 'string') record['action'] = record['action'].toLowerCase();
    if (record['standing_instruction'] === undefined && typeof record['core'] === 'boolean') record['standing_instruction'] = record['core'];
    if (typeof record['search_keys'] === 'string') record['search_keys'] = [record['search_keys']];
    return record;
  },
  z.object({
    action: z.enum(['add', 'update', 'noop']).default('add'),
    target_id: z.string().optional().nullable(),
    type: z.enum(MEMORY_TYPES),
    content: z.string().trim().min(1).max(2_000),
    standing_instruction: z.boolean().default(false),
    /** A request for the current task only ("this time…", "today…", "please write…"): never stored. */
    one_off: z.boolean().default(false),
    /** Ids of existing memories this one consolidates (paraphrases, per-instance copies): superseded by it and linked. */
    merges: z.array(z.string()).default([]),
    importance: z.number().min(0).max(1).default(0.6),
    confidence: z.number().min(0).max(1).default(0.7),
    turn: z.number().int().optional().nullable(),
    /** Questions this memory answers, in the user's languages: indexed with it, never shown. */
    search_keys: z.array(z.string().trim().min(1).max(300)).max(12).default([]),
  }),
);

export const extractorOutputSchema = z.preprocess(
  (raw) => (Array.isArray(raw) ? { memories: raw } : raw),
  z.object({
    memories: z.array(candidateSchema),
    session_summary: z.string().trim().max(4_000).optional().nullable(),
  }),
);

export type MemoryCandidate = z.infer<typeof candidateSchema>;
export type ExtractorOutput = z.infer<typeof extractorOutputSchema>;
