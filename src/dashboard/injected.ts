import type { Db } from '../store/index.js';

/** A skill the skills provider put into a turn, with the scores it was chosen by. */
export interface InjectedSkill {
  name: string;
  version: number | null;
  relevance: number | null;
  keyword: number | null;
  semantic: number | null;
  /** its full body was shown (otherwise its one-line summary) */
  full: boolean;
}

/** A memory the memory provider put into a turn: recalled (with scores) or a standing core rule. */
export interface InjectedMemory {
  id: string;
  kind: 'recalled' | 'core';
  type: string | null;
  score: number | null;
  relevance: number | null;
  in_window: boolean | null;
  /** the unit's text as stored now (null when it was forgotten since) */
  content: string | null;
}

/** What the proxy added to one turn, read from its injection record (proxy/model-request.ts injectionRecord). */
export interface InjectedView {
  placement: string | null;
  tokens: number | null;
  /** the text the proxy added, in full (null when its forwarded body is no longer stored) */
  text: string | null;
  /** providers that failed on this turn (the request went on without them) */
  failures: Array<{ provider: string; error: string }>;
  skills: InjectedSkill[];
  skills_generation: number | null;
  memories: InjectedMemory[];
  /** other providers' sections, by name and size */
  sections: Array<{ provider: string; tokens: number | null }>;
}

type Json = Record<string, unknown>;

const record = (value: unknown): Json | undefined => (value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Json) : undefined);
const list = (value: unknown): Json[] => (Array.isArray(value) ? value.map(record).filter((item): item is Json => item !== undefined) : []);
const num = (value: unknown): number | null => (typeof value === 'number' && Number.isFinite(value) ? value : null);
const str = (value: unknown): string | null => (typeof value === 'string' ? value : null);

/**
 * The injection record as stored, made safe to show: records written by older versions may lack
 * fields, so every field is read defensively instead of trusted. Memory contents are filled in later
 * (`withMemoryContents`), in one query for the whole page.
 */
export function readInjected(stored: unknown): InjectedView | null {
  const injected = record(stored);
  if (!injected) return null;
  const view: InjectedView = {
    placement: str(injected['placement']),
    tokens: num(injected['tokens']),
    text: null,
    failures: list(injected['failures']).map((failure) => ({ provider: str(failure['provider']) ?? 'unknown', error: str(failure['error']) ?? '' })),
    skills: [],
    skills_generation: null,
    memories: [],
    sections: [],
  };
  for (const section of list(injected['sections'])) {
    const provider = str(section['provider']) ?? 'unknown';
    const details = record(section['details']) ?? {};
    view.sections.push({ provider, tokens: num(section['tokens']) });
    if (provider === 'skills') {
      view.skills_generation = num(details['generation']);
      for (const skill of list(details['skills'])) {
        view.skills.push({
          name: str(skill['name']) ?? '?',
          version: num(skill['version']),
          relevance: num(skill['relevance']),
          keyword: num(skill['keyword']),
          semantic: num(skill['semantic']),
          full: skill['full'] === true,
        });
      }
    } else if (provider === 'memory') {
      for (const unit of list(details['core'])) {
        view.memories.push({ id: str(unit['id']) ?? '?', kind: 'core', type: null, score: null, relevance: null, in_window: null, content: null });
      }
      for (const unit of list(details['recalled'])) {
        view.memories.push({
          id: str(unit['id']) ?? '?',
          kind: 'recalled',
          type: str(unit['type']),
          score: num(unit['score']),
          relevance: num(unit['relevance']),
          in_window: typeof unit['in_window'] === 'boolean' ? unit['in_window'] : null,
          content: null,
        });
      }
    }
  }
  return view;
}

/** SQLite's default limit on bound parameters is far above this; chunks keep each statement small. */
const IDS_PER_QUERY = 200;

/** Fills in the stored text (and type, for core rules) of every memory shown on the page. */
export function withMemoryContents(db: Db, views: ReadonlyArray<InjectedView | null>): void {
  const ids = shownMemoryIds(views);
  const found = new Map<string, { type: string; content: string }>();
  for (let start = 0; start < ids.length; start += IDS_PER_QUERY) {
    const chunk = ids.slice(start, start + IDS_PER_QUERY);
    const rows = db.prepare(`SELECT id, type, content FROM memory_units WHERE id IN (${chunk.map(() => '?').join(',')})`).all(...chunk) as Array<{
      id: string;
      type: string;
      content: string;
    }>;
    for (const row of rows) found.set(row.id, row);
  }
  fillMemoryContents(views, found);
}

/** The ids of the memories the views show, once each. */
export function shownMemoryIds(views: ReadonlyArray<InjectedView | null>): string[] {
  return [...new Set(views.flatMap((view) => view?.memories.map((memory) => memory.id) ?? []))];
}

/** Sets each shown memory's text and type from the units found (a unit forgotten since: null). */
export function fillMemoryContents(views: ReadonlyArray<InjectedView | null>, found: ReadonlyMap<string, { type: string; content: string }>): void {
  for (const view of views) {
    for (const memory of view?.memories ?? []) {
      const unit = found.get(memory.id);
      memory.content = unit?.content ?? null;
      memory.type ??= unit?.type ?? null;
    }
  }
}
