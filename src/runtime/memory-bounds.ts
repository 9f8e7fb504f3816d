import { setFlagsFromString } from 'node:v8';

/**
 * How the long-running proxy keeps its memory bounded under full load (issue 11's soak: peak RSS
 * ≤ 200 MiB). Its live heap stays near 30 MiB; what grew was garbage waiting for a collection,
 * because V8 sizes a heap from the machine's RAM and lets the old generation grow to four times
 * the live data between collections on a large machine, and the young generation to 2 × 16 MiB.
 */

/** Node flags for the proxy process: the young generation's semi-spaces stay at 4 MiB. */
export const PROXY_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=4'];

/**
 * Environment for the proxy process, under whatever the user set: glibc's malloc keeps two arenas
 * rather than eight per core for the proxy's few threads, which only fragment memory.
 */
export const PROXY_ENVIRONMENT: Readonly<Record<string, string>> = { MALLOC_ARENA_MAX: '2' };

/**
 * The old generation grows by under a third of its live size between full collections instead
 * of up to four times. V8 reads this flag at every collection, so setting it at start applies it
 * to the whole process (worker threads included); unlike `--max-old-space-size` it is no hard cap
 * that could end the process.
 */
export function boundHeapGrowth(): void {
  setFlagsFromString('--heap-growing-percent=30');
}
