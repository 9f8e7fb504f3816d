import {
  POSTGRES_MEMORY_NOTIFY_V22,
  POSTGRES_MEMORY_SEARCH_V18,
  POSTGRES_INDEX_WORDS_V24,
  POSTGRES_PGVECTOR_V23,
  POSTGRES_QUEUE_V19,
  POSTGRES_SCHEMA_V16,
} from './postgres-schema.js';

/**
 * Versioned schema migrations, one list for both engines. Each entry runs once, in order, inside a
 * transaction. SQLite (the personal store) runs `sql` and keeps the applied version in
 * `PRAGMA user_version`; PostgreSQL (the team store, `store/postgres/`) runs `postgres` and keeps
 * it in `metaclaw_schema_migrations`. An empty string is a no-op on that engine, but the version is
 * still recorded, so both engines count versions alike. Never edit a released migration: add a new
 * one, with the change written for both engines.
 */
export interface Migration {
  readonly version: number;
  readonly description: string;
  /** SQLite DDL ('' : nothing to do in SQLite). */
  readonly sql: string;
  /** PostgreSQL DDL ('' : nothing to do in PostgreSQL). */
  readonly postgres: string;
}

/**
 * PostgreSQL's history starts at version 16, which creates the whole schema as versions 1-15 left
 * it in SQLite: those are no-ops in PostgreSQL (the team store did not exist when they shipped).
 */
const BEFORE_POSTGRES = '';

/** A JavaScript Date holds times within ±8.64e15 ms of 1970. */
const REPAIR_UNIT_TIMES = `
  UPDATE memory_units SET observed_at = created_at WHERE observed_at > 8640000000000000 OR observed_at < -8640000000000000;
  UPDATE memory_units SET valid_from = created_at WHERE valid_from > 8640000000000000 OR valid_from < -8640000000000000;
`;

/**
 * Version 27: memory_units_session (source_session, origin) gains scope and speaker, so the look-up
 * of a session's user turns (memory/keyword-index.ts, SESSION_WEIGHT) reads no unit rows. The old
 * index is its prefix, so it is replaced rather than kept beside it (one index to write per unit).
 */
const SESSION_TURNS_V27 = `
  DROP INDEX memory_units_session;
  CREATE INDEX memory_units_session ON memory_units(source_session, origin, scope, speaker);
`;

/**
 * Version 28: the look-ups of capturing a stated rule (memory/service.ts captureRules) read only the
 * units they are about: learned units by text, standing instructions by text, and rule instances.
 * Each read every unit of the scope (its raw turns too): 2,500 rules stated in one ingest held the
 * proxy for 9 s. Partial indexes, so a raw turn (most units) is written to none of them; each holds
 * the columns its query fixes, so the planner prefers it to memory_units_core (a prefix). The team
 * store captures rules in a seeded SQLite workspace; its indexes of the same names hash the text
 * (PostgreSQL's b-tree refuses an entry of more than ~2,700 bytes) and serve its seeding reads.
 */
const RULE_LOOKUPS_V28 = `
  CREATE INDEX memory_units_learned_text ON memory_units(scope, content, status) WHERE origin != 'raw_turn';
  CREATE INDEX memory_units_core_text ON memory_units(scope, core, status, content) WHERE core = 1;
  CREATE INDEX memory_units_rule_instances ON memory_units(scope, origin, core, status) WHERE origin = 'rule' AND core = 0;
`;
const RULE_LOOKUPS_V28_POSTGRES = `
  CREATE INDEX memory_units_learned_text ON memory_units USING hash (content) WHERE origin <> 'raw_turn';
  CREATE INDEX memory_units_core_text ON memory_units USING hash (content) WHERE core = 1;
  CREATE INDEX memory_units_rule_instances ON memory_units(scope, origin, core, status) WHERE origin = 'rule' AND core = 0;
`;

export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    description: 'sessions, turns, turn payloads and their segments, job queue, learning spend, key-value state',
    postgres: BEFORE_POSTGRES,
    sql: `
      CREATE TABLE sessions (
        id TEXT PRIMARY KEY,
        identity_source TEXT NOT NULL,      -- header | body | runtime | fingerprint
        lineage TEXT NOT NULL,              -- groups sessions of one agent/user so a reset can end the previous one
        scope TEXT,                         -- memory scope derived from headers
        client_format TEXT NOT NULL,
        started_at INTEGER NOT NULL,
        last_turn_at INTEGER NOT NULL,
        ended_at INTEGER,
        end_reason TEXT,                    -- done_header | idle | reset | shutdown
        turn_count INTEGER NOT NULL DEFAULT 0,
        main_turn_count INTEGER NOT NULL DEFAULT 0
      );
      CREATE INDEX sessions_open ON sessions(ended_at, last_turn_at);
      CREATE INDEX sessions_lineage ON sessions(lineage, ended_at);

      CREATE TABLE turns (
        id TEXT PRIMARY KEY,                -- the request id (x-metaclaw-request-id)
        session_id TEXT NOT NULL REFERENCES sessions(id),
        seq INTEGER NOT NULL,
        turn_type TEXT NOT NULL,            -- main | side
        client_format TEXT NOT NULL,
        upstream_name TEXT,
        upstream_format TEXT,
        model TEXT,
        stream INTEGER NOT NULL,
        query TEXT,                         -- the user's real request, wrappers removed
        response_text TEXT,
        tool_calls TEXT,                    -- JSON
        finish_reason TEXT,
        input_tokens INTEGER,
        output_tokens INTEGER,
        status INTEGER,
        outcome TEXT NOT NULL,              -- ok | upstream_error | stream_broken | client_aborted | proxy_error
        error TEXT,
        attempts INTEGER NOT NULL DEFAULT 0,
        started_at INTEGER NOT NULL,
        first_byte_ms REAL,
        duration_ms REAL
      );
      CREATE INDEX turns_session ON turns(session_id, seq);
      CREATE INDEX turns_started ON turns(started_at);

      -- Full bodies live apart from the summary so lists stay fast and retention can drop them alone.
      -- Large bodies are stored as a skeleton whose messages, tools and system prompt point into
      -- payload_segments: an agent resends its whole history every turn, so each part is kept once.
      CREATE TABLE turn_payloads (
        turn_id TEXT PRIMARY KEY REFERENCES turns(id) ON DELETE CASCADE,
        received TEXT,                      -- the request body as received (document, see payload-codec)
        injected TEXT,                      -- JSON: what the proxy added, with scores
        forwarded TEXT,                     -- the body sent upstream (document)
        received_headers TEXT,              -- JSON: non-secret request headers
        stripped_keys TEXT                  -- JSON: non-standard body keys removed before forwarding
      );
      CREATE TABLE payload_segments (
        hash TEXT PRIMARY KEY,
        json TEXT NOT NULL,
        last_used_at INTEGER NOT NULL       -- a segment unused since the retention cutoff is dropped
      ) WITHOUT ROWID;

      CREATE TABLE jobs (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        kind TEXT NOT NULL,
        payload TEXT NOT NULL,              -- JSON
        dedupe_key TEXT,                    -- at most one queued job per key
        status TEXT NOT NULL,               -- queued | leased | done | dead
        attempts INTEGER NOT NULL DEFAULT 0,
        max_attempts INTEGER NOT NULL,
        run_after INTEGER NOT NULL,
        lease_until INTEGER,
        leased_by TEXT,
        last_error TEXT,
        tokens_used INTEGER NOT NULL DEFAULT 0,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL,
        finished_at INTEGER
      );
      CREATE INDEX jobs_ready ON jobs(status, run_after);
      CREATE UNIQUE INDEX jobs_dedupe ON jobs(dedupe_key) WHERE dedupe_key IS NOT NULL AND status IN ('queued', 'leased');

      CREATE TABLE learning_spend (
        day TEXT NOT NULL,                  -- local date YYYY-MM-DD
        kind TEXT NOT NULL,
        tokens INTEGER NOT NULL DEFAULT 0,
        calls INTEGER NOT NULL DEFAULT 0,
        PRIMARY KEY (day, kind)
      );

      CREATE TABLE state (
        key TEXT PRIMARY KEY,
        value TEXT NOT NULL
      );
    `,
  },
  {
    version: 2,
    description: 'skills: usage and outcomes (credit), versions, proposals, vectors',
    postgres: BEFORE_POSTGRES,
    sql: `
      -- Embeddings of skills, derived from the SKILL.md files (the source of truth) by content hash.
      CREATE TABLE skill_vectors (
        name TEXT PRIMARY KEY,
        content_hash TEXT NOT NULL,
        model TEXT NOT NULL,
        vector BLOB NOT NULL
      );

      -- Credit: which skill was injected into which turn, and how those turns went.
      CREATE TABLE skill_usage (
        turn_id TEXT NOT NULL,
        session_id TEXT NOT NULL,
        skill TEXT NOT NULL,
        rank INTEGER NOT NULL,
        relevance REAL NOT NULL,
        full_body INTEGER NOT NULL,
        created_at INTEGER NOT NULL,
        PRIMARY KEY (turn_id, skill)
      );
      CREATE INDEX skill_usage_skill ON skill_usage(skill, created_at);
      CREATE TABLE turn_outcomes (
        turn_id TEXT PRIMARY KEY,
        session_id TEXT NOT NULL,
        outcome TEXT,                       -- corrected | accepted
        judge_score REAL,                   -- from the RL judge, when it runs
        evidence TEXT,
        updated_at INTEGER NOT NULL
      );

      -- Every change to a skill, so diff and revert work; content is the whole SKILL.md ('' = removed).
      CREATE TABLE skill_versions (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        name TEXT NOT NULL,
        version INTEGER NOT NULL,
        action TEXT NOT NULL,               -- create | update | remove | revert | import | install | manual
        content TEXT NOT NULL,
        generation INTEGER NOT NULL,
        source TEXT,                        -- session id, proposal id, or cli
        created_at INTEGER NOT NULL
      );
      CREATE INDEX skill_versions_name ON skill_versions(name, id);

      -- Evolution proposals waiting for review (skills.review: manual).
      CREATE TABLE skill_proposals (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        session_id TEXT,
        action TEXT NOT NULL,               -- create | update
        name TEXT NOT NULL,
        draft TEXT NOT NULL,                -- JSON SkillDraft
        evidence TEXT NOT NULL,             -- JSON list
        reason TEXT,
        status TEXT NOT NULL,               -- pending | approved | rejected | superseded
        created_at INTEGER NOT NULL,
        decided_at INTEGER
      );
      CREATE INDEX skill_proposals_status ON skill_proposals(status, id);
    `,
  },
  {
    version: 3,
    description: 'memory units, their keyword index and access log',
    postgres: BEFORE_POSTGRES,
    sql: `
      CREATE TABLE memory_units (
        rowid INTEGER PRIMARY KEY,          -- key of the FTS and vector entries
        id TEXT NOT NULL UNIQUE,            -- public id (mem_…)
        scope TEXT NOT NULL,
        type TEXT NOT NULL,                 -- preference | semantic | project_state | episodic | procedural_observation | working_summary
        content TEXT NOT NULL,
        terms TEXT NOT NULL,                -- segmented, stemmed terms (what the keyword index holds)
        speaker TEXT,                       -- raw turns: user | assistant
        importance REAL NOT NULL,
        confidence REAL NOT NULL,
        core INTEGER NOT NULL DEFAULT 0,    -- standing instruction: injected on every main turn
        pinned INTEGER NOT NULL DEFAULT 0,
        status TEXT NOT NULL DEFAULT 'active',  -- active | superseded
        superseded_by TEXT,
        origin TEXT NOT NULL,               -- raw_turn | extractor | rule | manual | import | summary | consolidation
        raw_key TEXT UNIQUE,                -- session:turn:speaker for raw turns (ingest once)
        observed_at INTEGER NOT NULL,
        valid_from INTEGER NOT NULL,
        source_session TEXT,
        source_turns TEXT NOT NULL DEFAULT '[]',
        flagged TEXT,                       -- why it is never injected (looks like a prompt injection)
        access_count INTEGER NOT NULL DEFAULT 0,
        last_accessed_at INTEGER,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL
      );
      CREATE INDEX memory_units_scope ON memory_units(scope, status, type);
      CREATE INDEX memory_units_core ON memory_units(scope, core, status);
      CREATE INDEX memory_units_session ON memory_units(source_session, origin);
      CREATE INDEX memory_units_observed ON memory_units(scope, observed_at);

      -- Contentless: the index holds terms only; the text lives in memory_units. A hard delete removes
      -- both (secure_delete zeroes freed pages; the forget path also optimises the index). Every term
      -- is prefixed with its scope's key, so a lookup can only ever see its own scope, and document
      -- frequencies are per scope.
      CREATE VIRTUAL TABLE memory_fts USING fts5(terms, content = '', contentless_delete = 1, tokenize = 'unicode61 remove_diacritics 2');
      CREATE VIRTUAL TABLE memory_fts_vocab USING fts5vocab(memory_fts, 'row');
    `,
  },
  {
    version: 4,
    description: 'sessions that nothing learns from (the doctor canary)',
    postgres: BEFORE_POSTGRES,
    sql: `ALTER TABLE sessions ADD COLUMN learning INTEGER NOT NULL DEFAULT 1;`,
  },
  {
    version: 5,
    description: 'body parts are counted by what uses them (retention deletes a part only when no kept body uses it)',
    postgres: BEFORE_POSTGRES,
    sql: `
      -- How many bodies and list nodes use each part (conversation/segment-table.ts); a part goes
      -- when nothing does. Parts were dropped by the time they were last written, which deleted
      -- parts that kept bodies still used. Counts live apart: a row is rewritten whole on update.
      CREATE TABLE payload_segment_refs (
        hash TEXT PRIMARY KEY,
        refs INTEGER NOT NULL
      ) WITHOUT ROWID;
      -- Bodies stored until now (document v1) use parts by hash: their messages, tools and system prompt.
      INSERT INTO payload_segment_refs (hash, refs)
        SELECT hash, COUNT(*) FROM (
          SELECT m.value AS hash FROM turn_payloads p, json_each(CASE WHEN json_valid(p.received) THEN p.received ELSE '{}' END, '$.messages') m
          UNION ALL SELECT m.value FROM turn_payloads p, json_each(CASE WHEN json_valid(p.forwarded) THEN p.forwarded ELSE '{}' END, '$.messages') m
          UNION ALL SELECT json_extract(p.received, '$.tools') FROM turn_payloads p WHERE json_valid(p.received)
          UNION ALL SELECT json_extract(p.received, '$.system') FROM turn_payloads p WHERE json_valid(p.received)
          UNION ALL SELECT json_extract(p.forwarded, '$.tools') FROM turn_payloads p WHERE json_valid(p.forwarded)
          UNION ALL SELECT json_extract(p.forwarded, '$.system') FROM turn_payloads p WHERE json_valid(p.forwarded)
        ) WHERE typeof(hash) = 'text' AND hash IN (SELECT hash FROM payload_segments) GROUP BY hash;
      DELETE FROM payload_segments WHERE hash NOT IN (SELECT hash FROM payload_segment_refs);
      ALTER TABLE payload_segments DROP COLUMN last_used_at;
    `,
  },
  {
    version: 6,
    description: 'the client that sent each turn (its profile) and what a side request was for',
    postgres: BEFORE_POSTGRES,
    sql: `
      ALTER TABLE turns ADD COLUMN client_profile TEXT;   -- openclaw | claude-code | codex | qwen-code | opencode | generic
      ALTER TABLE turns ADD COLUMN side_request TEXT;     -- title | summary | compaction | memory | classifier | quota
    `,
  },
  {
    version: 7,
    description: 'memory units: search keys (indexed, never shown) and the raw turn before each raw turn',
    postgres: BEFORE_POSTGRES,
    sql: `
      ALTER TABLE memory_units ADD COLUMN search_keys TEXT NOT NULL DEFAULT '[]';  -- JSON list: the questions a unit answers (extractor), a speaker's name
      ALTER TABLE memory_units ADD COLUMN previous_raw INTEGER;                     -- raw turns: rowid of the raw turn before it in its session
      ALTER TABLE memory_units ADD COLUMN neighbour_terms TEXT NOT NULL DEFAULT ''; -- raw turns: that turn's terms (its index entry holds them, marked)
      CREATE INDEX memory_units_previous ON memory_units(previous_raw) WHERE previous_raw IS NOT NULL;
      `,
  },
  {
    version: 8,
    description: 'the Responses API id of a turn, so previous_response_id and GET /v1/responses/{id} find it',
    postgres: BEFORE_POSTGRES,
    sql: `
      ALTER TABLE turns ADD COLUMN response_id TEXT;
      -- Partial: only Responses API turns have one, other turns cost the index nothing.
      CREATE INDEX turns_response ON turns(response_id) WHERE response_id IS NOT NULL;
    `,
  },
  {
    version: 9,
    description: 'search keys of skills, in the languages the user writes (cross-lingual retrieval)',
    postgres: BEFORE_POSTGRES,
    sql: `
      -- Written by a learning job for each skill and language, kept by the skill's content hash, so
      -- an edit asks again and a revert finds its keys; never written into SKILL.md.
      CREATE TABLE skill_search_keys (
        content_hash TEXT NOT NULL,
        language TEXT NOT NULL,
        name TEXT NOT NULL,
        keys TEXT NOT NULL,                 -- JSON array of short phrases
        prompt_version INTEGER NOT NULL,
        model TEXT,
        created_at INTEGER NOT NULL,
        PRIMARY KEY (content_hash, language)
      ) WITHOUT ROWID;
    `,
  },
  {
    version: 10,
    description: 'search keys of memory units, in the languages the user writes (cross-lingual recall)',
    postgres: BEFORE_POSTGRES,
    sql: `
      -- Written by a learning job for each memory unit and language, kept by the unit's content hash
      -- (an edit asks again), and indexed with the unit in memory_fts.
      CREATE TABLE memory_search_keys (
        content_hash TEXT NOT NULL,
        language TEXT NOT NULL,
        keys TEXT NOT NULL,                 -- JSON array of short phrases
        prompt_version INTEGER NOT NULL,
        model TEXT,
        created_at INTEGER NOT NULL,
        PRIMARY KEY (content_hash, language)
      ) WITHOUT ROWID;
    `,
  },
  {
    version: 11,
    description: 'RL training steps: what each reported and where its weights went',
    postgres: BEFORE_POSTGRES,
    sql: `
      -- One row per training step. A step is 'done' only once the optimizer applied it and its
      -- weights were saved for sampling (sampler_path: what rl rollback serves again); a step left
      -- 'running' by a process that died is marked 'abandoned' at the next start.
      CREATE TABLE rl_steps (
        step INTEGER PRIMARY KEY,
        status TEXT NOT NULL,               -- running | done | empty | abandoned | failed
        trigger TEXT NOT NULL,              -- window | manual
        skill_generation INTEGER NOT NULL,
        samples INTEGER NOT NULL,
        loss REAL,
        metrics TEXT,                       -- JSON object of the backend's numeric metrics
        sampler_path TEXT,
        state_path TEXT,
        started_at INTEGER NOT NULL,
        finished_at INTEGER,
        error TEXT
      );
    `,
  },
  {
    version: 12,
    description: 'the RL scheduler: its state, the training step in the window and the last one that ended',
    postgres: BEFORE_POSTGRES,
    sql: `
      -- One row. A step still in UPDATING or PAUSING at start was cut by the restart: it is kept as
      -- pending (with its batch) for the trainer to run again, and the state starts over in IDLE_WAIT.
      CREATE TABLE scheduler_state (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        state TEXT NOT NULL,                -- IDLE_WAIT | WINDOW_OPEN | UPDATING | PAUSING
        since INTEGER NOT NULL,             -- when it entered that state (ms)
        reason TEXT NOT NULL,               -- why, in words
        window_sources TEXT,                -- JSON list of the sources holding the window open
        window_until INTEGER,               -- the window's expected end, when known
        step_id TEXT,                       -- the step running (UPDATING, PAUSING) or waiting to run again
        step_batch TEXT,                    -- JSON, the trainer's: what that step covers
        step_started_at INTEGER,
        step_pending INTEGER NOT NULL DEFAULT 0, -- 1: the step did not finish and waits for the next window
        last_step_id TEXT,
        last_step_outcome TEXT,             -- done | abandoned | failed | interrupted
        last_step_ended_at INTEGER,
        steps_done INTEGER NOT NULL DEFAULT 0,
        steps_abandoned INTEGER NOT NULL DEFAULT 0,
        updated_at INTEGER NOT NULL
      );
    `,
  },
  {
    version: 13,
    description: 'the RL sample buffer: one row per recorded main turn, its skill generation, token ids when served from the policy, the judge verdict',
    postgres: BEFORE_POSTGRES,
    sql: `
      -- Texts stay in turns and turn_payloads (turn_id is the reference); a row adds what RL needs.
      CREATE TABLE rl_samples (
        turn_id TEXT PRIMARY KEY,
        session_id TEXT NOT NULL,
        seq INTEGER NOT NULL,
        skill_generation INTEGER NOT NULL,  -- the skill library's generation when the turn was served
        policy_version TEXT,                -- the sampler that served it; null: the normal upstream served it
        prompt_tokens BLOB,                 -- int32 little-endian, exactly as rendered for the sampler; null: not trainable
        response_tokens BLOB,               -- int32 little-endian, exactly as sampled
        response_logprobs BLOB,             -- float32 little-endian, one per response token
        next_turn_id TEXT,                  -- the next main turn of the session (the state the judge sees)
        judge_state TEXT NOT NULL DEFAULT 'waiting', -- waiting | queued | scored | tie | failed
        reward INTEGER,                     -- -1 | 0 | 1 by majority; null unless scored
        votes TEXT,                         -- JSON array, one entry per vote: -1 | 0 | 1 | null (no usable answer)
        judge_model TEXT,
        judge_error TEXT,
        judged_at INTEGER,
        dropped_at INTEGER,                 -- left the trainable buffer: the skill generation moved on
        dropped_for_generation INTEGER,
        trained_step INTEGER,
        created_at INTEGER NOT NULL
      );
      CREATE INDEX rl_samples_session ON rl_samples(session_id, seq);
      CREATE INDEX rl_samples_judge ON rl_samples(judge_state, created_at);
      CREATE INDEX rl_samples_generation ON rl_samples(skill_generation);
    `,
  },
  {
    version: 14,
    description: 'on-policy distillation: the teacher logprobs of each trainable sample',
    postgres: BEFORE_POSTGRES,
    sql: `
      -- Null: not asked (OPD off, or no token ids); queued | done | failed (failed samples train without the KL term).
      ALTER TABLE rl_samples ADD COLUMN teacher_state TEXT;
      ALTER TABLE rl_samples ADD COLUMN teacher_logprobs BLOB; -- float32 little-endian, one per response token
      ALTER TABLE rl_samples ADD COLUMN teacher_error TEXT;
    `,
  },
  {
    version: 15,
    description: "the scheduler windows (when each idle window opened and closed, and what held it open); indexes for the dashboard's reads",
    postgres: BEFORE_POSTGRES,
    sql: `
      -- One row per window the scheduler opened (the dashboard's timeline). closed_at null: still open.
      CREATE TABLE scheduler_windows (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        opened_at INTEGER NOT NULL,
        closed_at INTEGER,
        sources TEXT NOT NULL,              -- JSON list: sleep_hours | keyboard_idle | proxy_idle | calendar
        close_reason TEXT
      );
      CREATE INDEX scheduler_windows_opened ON scheduler_windows(opened_at);

      -- The dashboard's reads run on the proxy's thread: each is an index range, never a scan of a big table.
      CREATE INDEX sessions_last_turn ON sessions(last_turn_at, id);
      CREATE INDEX jobs_updated ON jobs(updated_at);
      CREATE INDEX jobs_session ON jobs(json_extract(payload, '$.sessionId'));
      CREATE INDEX jobs_turn ON jobs(json_extract(payload, '$.turnId'));
      CREATE INDEX memory_units_learned ON memory_units(created_at) WHERE origin <> 'raw_turn';
      CREATE INDEX rl_samples_judged ON rl_samples(judged_at) WHERE judge_state = 'scored';
    `,
  },
  {
    version: 16,
    description: 'the team store: the whole schema of versions 1-15 in PostgreSQL (nothing changes in SQLite)',
    sql: '',
    postgres: POSTGRES_SCHEMA_V16,
  },
  {
    version: 17,
    description: 'team members: who may use the proxy with a key of their own, and so has a memory scope of their own',
    postgres: `
      CREATE TABLE team_members (
        id TEXT PRIMARY KEY,
        name TEXT NOT NULL UNIQUE,
        key_hash TEXT NOT NULL UNIQUE,
        key_hint TEXT NOT NULL,
        created_at BIGINT NOT NULL,
        key_rotated_at BIGINT
      );
    `,
    sql: `
      -- A member's key is shown once and kept only as its SHA-256 (keys are 256 random bits, so a
      -- fast hash is enough). The name fixes the member's memory scope: user:<name>.
      CREATE TABLE team_members (
        id TEXT PRIMARY KEY,                -- mbr_…
        name TEXT NOT NULL UNIQUE,
        key_hash TEXT NOT NULL UNIQUE,
        key_hint TEXT NOT NULL,             -- the key's first characters, to tell keys apart in lists
        created_at INTEGER NOT NULL,
        key_rotated_at INTEGER
      );
    `,
  },
  {
    version: 18,
    description: "the team store's memory keyword index: postings, term and scope statistics (SQLite's is FTS5, nothing changes there)",
    sql: '',
    postgres: POSTGRES_MEMORY_SEARCH_V18,
  },
  {
    version: 19,
    description:
      'the team queue: leases with a fencing token and an idempotency key per job, effects recorded once per key, budget reservations across nodes (nothing changes in SQLite)',
    sql: '',
    postgres: POSTGRES_QUEUE_V19,
  },
  {
    version: 20,
    description: 'team skills: the current SKILL.md of every skill as a row (the folders of a personal install), versioned for optimistic writes',
    sql: '',
    postgres: `
      -- One row per skill name ever written. A removed skill keeps its row (removed = true, version
      -- counted on) so a node catching up after a disconnect learns of the removal; a later create
      -- under the same name carries on from that version. generation is the library generation of
      -- the row's last write (the counter itself is the state row skills.generation, as in SQLite).
      CREATE TABLE skills (
        name TEXT PRIMARY KEY,
        version INTEGER NOT NULL,
        content TEXT NOT NULL,
        removed BOOLEAN NOT NULL DEFAULT false,
        generation BIGINT NOT NULL,
        updated_at BIGINT NOT NULL
      );
      CREATE INDEX skills_generation ON skills(generation);
    `,
  },
  {
    version: 21,
    description:
      "team skills' supporting files: scripts and references beside a SKILL.md, kept with the skill (nothing changes in SQLite, where they are files)",
    sql: '',
    postgres: `
      -- A skill's folder besides its SKILL.md, one row per file (path relative to the folder, '/'
      -- separated); mode keeps a script's executable bit. Written with the skill, exported with it.
      CREATE TABLE skill_files (
        name TEXT NOT NULL,
        path TEXT NOT NULL,
        content BYTEA NOT NULL,
        mode INTEGER NOT NULL,
        updated_at BIGINT NOT NULL,
        PRIMARY KEY (name, path)
      );
    `,
  },
  {
    version: 22,
    description:
      "team memory: a change to a memory unit notifies every node (channel metaclaw_memory, the unit's scope), which drops that scope's request-path caches (nothing changes in SQLite)",
    sql: '',
    postgres: POSTGRES_MEMORY_NOTIFY_V22,
  },
  {
    version: 23,
    description:
      'team memory vectors in pgvector: the extension is created when the server has it and allows it, and skipped otherwise (nothing changes in SQLite)',
    sql: '',
    postgres: POSTGRES_PGVECTOR_V23,
  },
  {
    version: 24,
    description:
      'team memory index: each entry keeps the version of the bundled words it was written with, so memory.reindex rewrites only older ones (nothing changes in SQLite)',
    sql: '',
    postgres: POSTGRES_INDEX_WORDS_V24,
  },
  {
    version: 25,
    description:
      "team memory index: entries by words version, so a node's start finds older entries by index lookups instead of reading every entry (nothing changes in SQLite)",
    sql: '',
    postgres: 'CREATE INDEX memory_search_docs_words_version ON memory_search_docs (words_version);',
  },
  {
    version: 26,
    description:
      'memory units whose observed or valid-from time no Date can hold (ingest once took any number) get the time they were stored: one such unit made every search and export of its scope fail',
    sql: REPAIR_UNIT_TIMES,
    postgres: REPAIR_UNIT_TIMES,
  },
  {
    version: 27,
    description:
      "memory units by session also by scope and speaker: recall finds a session's first user turn and the user turns after it from the index alone (a look-up per rare query word's holder)",
    sql: SESSION_TURNS_V27,
    postgres: SESSION_TURNS_V27,
  },
  {
    version: 28,
    description:
      'memory units indexed for capturing a stated rule: learned units and standing instructions by text, rule instances by scope (each look-up read the whole scope)',
    sql: RULE_LOOKUPS_V28,
    postgres: RULE_LOOKUPS_V28_POSTGRES,
  },
  {
    version: 29,
    description:
      'jobs remember being asked for again while they ran: a memory written while the embed job ran was never embedded (its enqueue was a duplicate of the running job), until the next write',
    sql: 'ALTER TABLE jobs ADD COLUMN rerun INTEGER NOT NULL DEFAULT 0;',
    postgres: 'ALTER TABLE jobs ADD COLUMN rerun INTEGER NOT NULL DEFAULT 0;',
  },
];
