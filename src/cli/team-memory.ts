import type pg from 'pg';
import type { LoadedConfig } from '../config/index.js';
import { EmbeddingClient, SEARCH_EMBED_TIMEOUT_MS } from '../embeddings/index.js';
import { silentLogger } from '../logging/index.js';
import { embedsMemory, memorySettings } from '../runtime/settings.js';
import type { PgMemoryApi } from '../store/postgres/index.js';
import { printError } from './context.js';
import { CLI_INSTANCE } from './store.js';

type Postgres = typeof import('../store/postgres/index.js');

/**
 * The memory API `metaclaw memory` works through on a team store: the one a node serves its memory
 * routes with, vectors included when a node with this config would use them (memory.embedding.*
 * set, pgvector installed in the store). Units the commands add are then queued for embedding in
 * the transaction that adds them, as the routes queue them, so a running node embeds them; and
 * search is hybrid, calling the embeddings endpoint (the CLI is not a request path) within a
 * timeout. When that call fails (or the store's vectors are of another model), one line on stderr
 * says why, and keywords answer.
 */
export async function openTeamMemoryApi(postgres: Postgres, pool: pg.Pool, config: LoadedConfig): Promise<PgMemoryApi> {
  const settings = memorySettings(config);
  const queue = new postgres.PgJobQueue(pool, CLI_INSTANCE, config.values['learning.max_attempts']);
  const vectors = embedsMemory(settings)
    ? new postgres.PgMemoryVectors(pool, new EmbeddingClient(settings.embedding, SEARCH_EMBED_TIMEOUT_MS), silentLogger(), SEARCH_EMBED_TIMEOUT_MS)
    : undefined;
  // The index is a node's to make (at its start): the CLI only reads and queues.
  await postgres.enableVectorsIfInstalled(pool, vectors, { makeIndex: false });
  return new postgres.PgMemoryApi(
    pool,
    silentLogger(),
    { queue, settings },
    vectors?.enabled
      ? {
          store: vectors,
          queue,
          mode: settings.retrievalMode,
          keywordsOnly: (why) => printError(`Searched by keywords only: ${why}.`),
        }
      : undefined,
  );
}
