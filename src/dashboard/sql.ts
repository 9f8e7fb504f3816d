/**
 * The little that differs between the two stores' SQL in the dashboard's reads: the tables and
 * columns are the same in SQLite and in the team store (store/postgres-schema.ts), so each query is
 * written once, with `?` parameters, and these fill in the rest.
 */
export interface SqlDialect {
  /** A JSON text column's top-level key, as text. */
  json(column: string, key: string): string;
  /** SQLite's unary `+`, which keeps its planner off a column's index; nothing in PostgreSQL. */
  noIndex: string;
  /** A join SQLite must take in the order written (its CROSS JOIN); a plain join in PostgreSQL, whose planner picks the order. */
  orderedJoin: string;
}

export const SQLITE_SQL: SqlDialect = { json: (column, key) => `json_extract(${column}, '$.${key}')`, noIndex: '+', orderedJoin: 'CROSS JOIN' };
export const POSTGRES_SQL: SqlDialect = { json: (column, key) => `(${column}::jsonb ->> '${key}')`, noIndex: '', orderedJoin: 'JOIN' };
