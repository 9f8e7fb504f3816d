import { z } from 'zod';

/**
 * What the evolver LLM must return. Tolerant where models are sloppy (aliases, a bare array, a
 * single evidence string), strict about what gets stored (checked again in apply.ts).
 */
const ACTION_ALIASES: Record<string, 'create' | 'update'> = {
  create: 'create',
  new: 'create',
  add: 'create',
  update: 'update',
  edit: 'update',
  improve: 'update',
  modify: 'update',
};

const changeSchema = z.preprocess(
  (raw) => {
    if (typeof raw !== 'object' || raw === null) return raw;
    const record = { ...(raw as Record<string, unknown>) };
    if (record['body'] === undefined && typeof record['content'] === 'string') record['body'] = record['content'];
    if (typeof record['evidence'] === 'string') record['evidence'] = [record['evidence']];
    if (typeof record['action'] === 'string') record['action'] = ACTION_ALIASES[record['action'].toLowerCase()] ?? record['action'];
    return record;
  },
  z.object({
    action: z.enum(['create', 'update']).default('create'),
    name: z.string().min(1),
    description: z.string().min(1),
    category: z.string().optional(),
    body: z.string().min(1),
    evidence: z.array(z.string().min(1)).min(1, 'each change needs evidence from the session'),
    reason: z.string().optional(),
  }),
);

export const evolverOutputSchema = z.preprocess(
  (raw) => {
    if (Array.isArray(raw)) return { changes: raw };
    if (typeof raw === 'object' && raw !== null && !('changes' in raw) && Array.isArray((raw as { skills?: unknown }).skills))
      return { changes: (raw as { skills: unknown[] }).skills };
    return raw;
  },
  z.object({ changes: z.array(changeSchema) }),
);

export type ProposedChange = z.infer<typeof changeSchema>;
export type EvolverOutput = z.infer<typeof evolverOutputSchema>;
