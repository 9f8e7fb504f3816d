/**
 * The team store's tables in dependency order (a table comes after every table its foreign keys
 * point at), so an import can insert them one after another and a merge can never break a key.
 * Every table of the personal SQLite store is here except the FTS5 index (memory_fts and its vocab
 * table), which is derived from memory_units and has no PostgreSQL counterpart.
 */
export interface TeamTable {
  readonly name: string;
  /** An identity column: after rows are copied with their ids, its sequence is moved past them. */
  readonly identity?: string;
  /** The SQLite table it is copied from, when it is not the table of the same name. */
  readonly from?: 'memory_vec';
  /**
   * Columns only the team store has, besides the SQLite ones and with defaults (an import leaves
   * them at those): state that exists only when many nodes share the table.
   */
  readonly teamOnlyColumns?: readonly string[];
}

export const TEAM_TABLES: readonly TeamTable[] = [
  { name: 'sessions' },
  { name: 'turns' },
  { name: 'turn_payloads' },
  { name: 'payload_segments' },
  { name: 'payload_segment_refs' },
  { name: 'jobs', identity: 'id', teamOnlyColumns: ['lease_token', 'idempotency_key'] },
  { name: 'learning_spend' },
  { name: 'state' },
  { name: 'skill_vectors' },
  { name: 'skill_usage' },
  { name: 'turn_outcomes' },
  { name: 'skill_versions', identity: 'id' },
  { name: 'skill_proposals', identity: 'id' },
  { name: 'memory_units', identity: 'rowid' },
  { name: 'memory_vectors', from: 'memory_vec' },
  { name: 'skill_search_keys' },
  { name: 'memory_search_keys' },
  { name: 'rl_steps' },
  { name: 'scheduler_state' },
  { name: 'rl_samples' },
  { name: 'scheduler_windows', identity: 'id' },
  { name: 'team_members' },
];

/**
 * Tables only the team store has (no SQLite twin, nothing copied from metaclaw.db by an import): the
 * memory keyword index (SQLite's is FTS5; an import writes its entries from the copied units), the
 * cross-node queue's recorded effects and budget reservations, and `skills` (each skill's current
 * SKILL.md and the files beside it, which a personal install keeps as folders: filled by
 * `PgSkillStore.importFolder`), and `skill_evolutions` (the evolution log a personal install keeps
 * as evolution_history.jsonl, which an import reads from the skills folder).
 * `store status` counts them with the others.
 */
export const TEAM_ONLY_TABLES: readonly string[] = [
  'memory_search_docs',
  'memory_postings',
  'memory_term_stats',
  'memory_scope_sizes',
  'job_effects',
  'learning_reservations',
  'skills',
  'skill_files',
  'skill_evolutions',
];
