import type { Db } from '../store/index.js';
import { tokenize } from '../text/index.js';
import type { Skill } from './types.js';

/** Column weights for FTS5's bm25(): a hit in the name counts most, then the description, then the body. */
const BM25_WEIGHTS = [4.0, 2.5, 1.0] as const;
/** A query term found only in a skill's body counts for less than one in its name or description. */
const BODY_ONLY_WEIGHT = 0.6;
/** Query terms no skill contains weigh this fraction of a rare term: they lower coverage, but less. */
const UNKNOWN_TERM_WEIGHT = 0.5;
const CANDIDATES = 40;

export interface KeywordHit {
  name: string;
  /** FTS5 BM25, made positive (higher is better). */
  bm25: number;
  /** 0..1: the IDF-weighted share of the query's terms this skill contains. */
  coverage: number;
  /** The IDF mass of the matched terms (absolute evidence, whatever the query's length). */
  matchedWeight: number;
}

interface TermSets {
  head: Set<string>;
  body: Set<string>;
}

interface IndexedFields {
  name: string[];
  description: string[];
  body: string[];
}

/**
 * Keyword search over the skill library: BM25 from SQLite FTS5 for ranking, and an IDF-weighted
 * coverage score in 0..1 for the relevance threshold (BM25 alone has no scale to threshold on).
 * Text is segmented and stemmed before indexing, so Chinese and Japanese match as words.
 */
export class SkillSearchIndex {
  private readonly terms = new Map<string, TermSets>();
  private readonly documentFrequency = new Map<string, number>();
  private readonly statements;

  constructor(private readonly db: Db) {
    this.statements = {
      docs: db.prepare<[], { name: string; fts_rowid: number; content_hash: string }>('SELECT name, fts_rowid, content_hash FROM skill_search_docs'),
      insertFts: db.prepare<[string, string, string]>('INSERT INTO skill_search (name, description, body) VALUES (?, ?, ?)'),
      deleteFts: db.prepare<[number]>('DELETE FROM skill_search WHERE rowid = ?'),
      upsertDoc: db.prepare<[string, number, string]>('INSERT INTO skill_search_docs (name, fts_rowid, content_hash) VALUES (?, ?, ?) ON CONFLICT(name) DO UPDATE SET fts_rowid = excluded.fts_rowid, content_hash = excluded.content_hash'),
      deleteDoc: db.prepare<[string]>('DELETE FROM skill_search_docs WHERE name = ?'),
      match: db.prepare<[string, number], { name: string; score: number }>(
        `SELECT d.name AS name, bm25(skill_search, ${BM25_WEIGHTS.join(', ')}) AS score
           FROM skill_search JOIN skill_search_docs d ON d.fts_rowid = skill_search.rowid
          WHERE skill_search MATCH ? ORDER BY score LIMIT ?`,
      ),
    };
  }

  get size(): number {
    return this.terms.size;
  }

  /** Brings the index in line with the whole library (at start): only changed files are re-indexed. */
  sync(skills: readonly Skill[]): void {
    const wanted = new Set(skills.map((skill) => skill.name));
    const removed = [...this.terms.keys(), ...this.statements.docs.all().map((row) => row.name)].filter((name) => !wanted.has(name));
    this.update(skills, [...new Set(removed)]);
  }

  /** Re-indexes changed skills (a hand edit, an evolution) and drops removed ones. */
  update(changed: readonly Skill[], removed: readonly string[]): void {
    const indexed = new Map(this.statements.docs.all().map((row) => [row.name, row]));
    this.db.transaction(() => {
      for (const name of removed) {
        const row = indexed.get(name);
        if (row) {
          this.statements.deleteFts.run(row.fts_rowid);
          this.statements.deleteDoc.run(name);
        }
        this.forget(name);
      }
      for (const skill of changed) {
        const row = indexed.get(skill.name);
        const fields = this.fields(skill);
        if (!row || row.content_hash !== skill.contentHash) {
          if (row) this.statements.deleteFts.run(row.fts_rowid);
          const result = this.statements.insertFts.run(fields.name.join(' '), fields.description.join(' '), fields.body.join(' '));
          this.statements.upsertDoc.run(skill.name, Number(result.lastInsertRowid), skill.contentHash);
        }
        this.forget(skill.name);
        this.remember(skill.name, fields);
      }
    })();
  }

  /**
   * Skills matching `queryTerms`, best first, with their coverage of the query. `contextTerms`
   * (from earlier turns) can add a little coverage but never find a skill on their own.
   */
  search(queryTerms: readonly string[], contextTerms: readonly string[] = []): KeywordHit[] {
    if (queryTerms.length === 0 || this.terms.size === 0) return [];
    const expression = queryTerms.map(quoteTerm).join(' OR ');
    let rows: Array<{ name: string; score: number }>;
    try {
      rows = this.statements.match.all(expression, CANDIDATES);
    } catch {
      return []; // a term FTS5 cannot parse: no keyword hits
    }
    const total = this.idfTotal(queryTerms);
    const contextTotal = contextTerms.length > 0 ? this.idfTotal(contextTerms) : 0;
    return rows.map((row) => {
      const sets = this.terms.get(row.name);
      const matchedWeight = sets ? this.matched(queryTerms, sets) : 0;
      let coverage = total > 0 ? matchedWeight / total : 0;
      if (sets && contextTotal > 0) coverage = Math.min(1, coverage + 0.25 * (this.matched(contextTerms, sets) / contextTotal) * coverage);
      return { name: row.name, bm25: -row.score, coverage, matchedWeight };
    });
  }

  /** Inverse document frequency of a term over the library (BM25's variant, always positive). */
  idf(term: string): number {
    const count = this.documentFrequency.get(term) ?? 0;
    return Math.log(1 + (this.terms.size - count + 0.5) / (count + 0.5));
  }

  private idfTotal(terms: readonly string[]): number {
    let sum = 0;
    for (const term of terms) sum += this.documentFrequency.has(term) ? this.idf(term) : this.idf(term) * UNKNOWN_TERM_WEIGHT;
    return sum;
  }

  private matched(terms: readonly string[], sets: TermSets): number {
    let sum = 0;
    for (const term of terms) {
      if (sets.head.has(term)) sum += this.idf(term);
      else if (sets.body.has(term)) sum += this.idf(term) * BODY_ONLY_WEIGHT;
    }
    return sum;
  }

  private fields(skill: Skill): IndexedFields {
    return { name: tokenize(skill.name.replaceAll('-', ' ')), description: tokenize(skill.description), body: tokenize(`${skill.category} ${skill.body}`) };
  }

  /** Adds a skill's terms to the per-skill sets and document frequencies. */
  private remember(name: string, fields: IndexedFields): void {
    const head = new Set([...fields.name, ...fields.description]);
    const body = new Set(fields.body);
    this.terms.set(name, { head, body });
    for (const term of new Set([...head, ...body])) this.documentFrequency.set(term, (this.documentFrequency.get(term) ?? 0) + 1);
  }

  private forget(name: string): void {
    const sets = this.terms.get(name);
    if (!sets) return;
    this.terms.delete(name);
    for (const term of new Set([...sets.head, ...sets.body])) {
      const count = (this.documentFrequency.get(term) ?? 1) - 1;
      if (count <= 0) this.documentFrequency.delete(term);
      else this.documentFrequency.set(term, count);
    }
  }
}

/** FTS5 string literal: the term in double quotes, inner quotes doubled. */
function quoteTerm(term: string): string {
  return `"${term.replaceAll('"', '""')}"`;
}
