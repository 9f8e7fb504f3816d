import { z } from 'zod';
import type { TeamJobHandler } from '../../learning/team-job.js';
import { EMBED_JOB } from '../../memory/service.js';
import type { PgJobQueue } from './job-queue.js';
import { EMBED_BATCH, type PgMemoryVectors } from './memory-vectors.js';

/**
 * Jobs after the first are numbered, and keyed by parity: the key of the job that queues the next
 * is still held (leased) when it does, so the next one takes the other.
 */
const payloadSchema = z.object({ round: z.number().int().nonnegative().default(0) }).catch({ round: 0 });
const keyOf = (round: number) => (round % 2 === 0 ? EMBED_JOB : `${EMBED_JOB}:next`);

/**
 * memory.embed on the team store: embeds a batch of units that have no vector (the embeddings
 * call, outside any transaction), and writes their vectors as the job's effect, once. A full batch
 * queues the next one in the same effect, so a big import is embedded a batch per job, and a node
 * that dies mid-batch leaves it to another after its lease.
 */
export function pgEmbedHandler(vectors: PgMemoryVectors, queue: PgJobQueue): TeamJobHandler {
  return {
    kind: EMBED_JOB,
    usesLlm: true,
    run: async (payload, context) => {
      const { round } = payloadSchema.parse(payload ?? {});
      if (!vectors.enabled) return undefined; // queued while pgvector or embeddings were there
      const pending = await vectors.pending(EMBED_BATCH);
      if (pending.length === 0) return undefined;
      const { vectors: embedded, tokens } = await vectors.client.embed(
        pending.map((unit) => unit.content.slice(0, 4_000)),
        context.signal,
      );
      if (tokens > 0) context.spend(tokens);
      return async (client) => {
        await vectors.write(
          client,
          pending.map((unit, index) => ({ sequence: unit.rowid, content: unit.content, vector: embedded[index]! })),
        );
        if (pending.length === EMBED_BATCH) await queue.enqueue(EMBED_JOB, { round: round + 1 }, { dedupeKey: keyOf(round + 1) }, client);
      };
    },
  };
}
