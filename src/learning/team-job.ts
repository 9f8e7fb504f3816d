import type pg from 'pg';
import type { JobContext } from './runner.js';

/**
 * A learning job's writes on the team store: run in the transaction that completes the job (see
 * PgJobQueue.complete), so they are made once per job, and never by a node whose lease ran out
 * while it was working. A throw rolls them back and the job fails (and is retried).
 */
export type TeamJobEffect = (client: pg.PoolClient) => Promise<void>;

/**
 * A learning worker of a team node: does its reading and LLM calls outside any transaction, then
 * returns the writes they lead to as an effect (or nothing, when there is nothing to write).
 */
export interface TeamJobHandler {
  readonly kind: string;
  /** Spends LLM tokens, so it pauses while the team's daily budget is spent. */
  readonly usesLlm: boolean;
  run(payload: unknown, context: JobContext): Promise<TeamJobEffect | undefined>;
}
