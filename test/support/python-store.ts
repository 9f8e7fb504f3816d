import Database from 'better-sqlite3';

/**
 * A store as the Python MetaClaw leaves it: its schema (version 6) written here from what its
 * store.py creates, with the memories a user has after a while of use.
 */
export function pythonStore(path: string, version = 6): void {
  const db = new Database(path);
  db.pragma('journal_mode = WAL');
  db.exec(`
    CREATE TABLE schema_version (version INTEGER NOT NULL, applied_at TEXT NOT NULL);
    CREATE TABLE memories (
      memory_id TEXT PRIMARY KEY, scope_id TEXT NOT NULL, memory_type TEXT NOT NULL, content TEXT NOT NULL,
      summary TEXT DEFAULT '', source_session_id TEXT DEFAULT '', source_turn_start INTEGER DEFAULT 0, source_turn_end INTEGER DEFAULT 0,
      entities_json TEXT DEFAULT '[]', topics_json TEXT DEFAULT '[]', importance REAL DEFAULT 0.5, confidence REAL DEFAULT 0.7,
      access_count INTEGER DEFAULT 0, reinforcement_score REAL DEFAULT 0.0, status TEXT DEFAULT 'active', supersedes_json TEXT DEFAULT '[]',
      superseded_by TEXT DEFAULT '', embedding_json TEXT DEFAULT '[]', created_at TEXT NOT NULL, updated_at TEXT NOT NULL,
      last_accessed_at TEXT DEFAULT '', expires_at TEXT DEFAULT '', tags_json TEXT DEFAULT '[]'
    );
    CREATE INDEX idx_memories_scope ON memories(scope_id);
    CREATE TABLE memory_events (event_id INTEGER PRIMARY KEY AUTOINCREMENT, timestamp TEXT NOT NULL, event_type TEXT NOT NULL, memory_id TEXT NOT NULL, scope_id TEXT DEFAULT '', detail TEXT DEFAULT '');
    CREATE TABLE memory_links (source_id TEXT NOT NULL, target_id TEXT NOT NULL, link_type TEXT NOT NULL DEFAULT 'related', created_at TEXT NOT NULL, PRIMARY KEY (source_id, target_id, link_type));
    CREATE TABLE scope_access (scope_id TEXT NOT NULL, principal TEXT NOT NULL, permission TEXT NOT NULL DEFAULT 'read', created_at TEXT NOT NULL, PRIMARY KEY (scope_id, principal, permission));
  `);
  db.prepare('INSERT INTO schema_version VALUES (?, ?)').run(version, '2026-01-05T09:00:00+00:00');
  const insert = db.prepare(`INSERT INTO memories (memory_id, scope_id, memory_type, content, summary, source_session_id, entities_json, topics_json,
    importance, confidence, status, superseded_by, created_at, updated_at, expires_at, tags_json)
    VALUES (@id, @scope, @type, @content, '', @session, @entities, '[]', @importance, 0.8, @status, @superseded_by, @created, @created, @expires, @tags)`);
  const row = (id: string, values: Partial<Record<string, unknown>> & { content: string }) =>
    insert.run({
      id,
      scope: 'default',
      type: 'semantic',
      session: 'py-session-1',
      entities: '[]',
      importance: 0.6,
      status: 'active',
      superseded_by: '',
      created: '2026-02-10T08:30:00+00:00',
      expires: '',
      tags: '[]',
      ...values,
    });
  row('m-cat', { content: "The user's cat is called Biscuit and is allergic to fish.", entities: '["Biscuit"]', tags: '["pets"]', importance: 0.7 });
  row('m-units', { scope: 'default|session:abc', type: 'preference', content: 'The user wants metric units in every answer.', importance: 0.99 });
  row('m-alice', { scope: 'user:alice', type: 'project_state', content: 'Alice is migrating the billing service to Postgres 17.' });
  row('m-old-cat', { content: "The user's cat is called Whiskers.", status: 'superseded', superseded_by: 'm-cat', created: '2026-01-10T08:00:00+00:00' });
  row('m-trip', { type: 'episodic', content: 'The user is in Lisbon this week.', expires: '2026-01-20T00:00:00+00:00' });
  row('m-archived', { type: 'episodic', content: 'The user had a dentist appointment on Monday.', status: 'archived' });
  row('m-gossip', { type: 'gossip', content: 'Someone said something.' });
  row('m-deploy', { type: 'project_state', content: 'Deploys go out on Fridays.' });
  db.close();
}
