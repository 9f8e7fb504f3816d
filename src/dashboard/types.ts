import type { ConversationStore } from '../conversation/index.js';
import type { JobQueue } from '../learning/index.js';
import type { MemoryService } from '../memory/index.js';
import type { SkillsService } from '../skills/index.js';
import type { StatusReport } from '../runtime/app.js';
import type { Db } from '../store/index.js';

/** A short summary of recent added latency (what the proxy spends before a request goes upstream). */
export interface LatencySummary {
  samples: number;
  p50_ms: number | null;
  p95_ms: number | null;
}

/**
 * What the dashboard reads: the running proxy's own services and store, handed in by the runtime.
 * Each page's data is assembled from them for one request, read-only; the pages change things
 * through the memory and skills HTTP APIs, as any other client would.
 */
export interface DashboardSources {
  db: Db;
  status(): StatusReport;
  conversation: ConversationStore;
  queue: JobQueue;
  skills: SkillsService;
  memory: MemoryService;
  addedLatency(): LatencySummary;
}
