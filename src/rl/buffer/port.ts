import type { RlSample } from '../types.js';
import type { SampleRow, Verdict } from './store.js';

import type { Awaitable } from '../../types/index.js';

/**
 * The sample buffer as the judge and training use it, on either engine: `RlBuffer` (SQLite,
 * synchronous, so the personal path keeps its plain calls) and `PgRlSamples` (the team store). The
 * code above it awaits every answer, which costs the synchronous one nothing.
 */
export interface RlSampleStore {
  get(turnId: string): Awaitable<SampleRow | undefined>;
  saveVerdict(turnId: string, verdict: Verdict): Awaitable<void>;
  /** The skill generation is now `generation`: untrained samples of older ones leave the trainable buffer. Returns how many. */
  dropOlderThan(generation: number): Awaitable<number>;
  trainable(currentGeneration: number, limit: number, options?: { teacher?: boolean }): Awaitable<RlSample[]>;
  trainableCount(currentGeneration: number, options?: { teacher?: boolean }): Awaitable<number>;
  markTrained(turnIds: readonly string[], step: number): Awaitable<void>;
}

/**
 * The scored samples an export reads (`metaclaw rl export`), on either engine: `RlBuffer.scored`
 * iterates SQLite's rows, `PgRlSamples.scored` pages through the team store's. The same rows in the
 * same order (scoredSamplesWhere), so one export writes the same lines from either.
 */
export interface ScoredSampleSource {
  scored(currentGeneration: number, includeDropped: boolean): Iterable<SampleRow> | AsyncIterable<SampleRow>;
}
