import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { Awaitable } from '../types/index.js';

/** What the proxy tells about one model request once it has ended. */
export interface RequestObservation {
  /** the client API: openai, anthropic, responses */
  route: string;
  /** the status the client got (0: the connection ended before one was sent) */
  status: number;
  seconds: number;
  /** time spent before the request went upstream (parsing, context injection): what the proxy adds */
  addedSeconds: number | undefined;
  /** time to the upstream's first byte (or the policy's answer) */
  upstreamSeconds: number | undefined;
  injectedTokens: number;
}

/** Figures read from the store at scrape time (never on the request path). */
export interface StoreFigures {
  queue(): Awaitable<Record<string, number>>;
  jobs(): Awaitable<Array<{ kind: string; status: string; count: number }>>;
  skills(): Awaitable<Array<{ category: string; count: number }>>;
  memories(): Awaitable<Array<{ type: string; count: number }>>;
  judgeScores(): Awaitable<Array<{ score: number; count: number }>>;
  trainingSteps(): Awaitable<Array<{ status: string; count: number }>>;
}

const LATENCY_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120];

/**
 * Prometheus metrics (`GET /metrics`, prom-client): request counts and latency by client API and
 * status, the proxy's own added latency, upstream latency and injected tokens are counted as
 * requests end (a few increments, no I/O); the queue, jobs, skills, memories, judge scores and
 * training steps are read from the store when scraped. Its own registry, so nothing global leaks in.
 */
export class ProxyMetrics {
  readonly registry = new Registry();
  private readonly requests: Counter<'route' | 'status'>;
  private readonly duration: Histogram<'route'>;
  private readonly added: Histogram<'route'>;
  private readonly upstream: Histogram<'route'>;
  private readonly injected: Counter<'route'>;
  private readonly recentAdded = new RecentValues(1_000);

  constructor(figures: StoreFigures, onError: (error: unknown) => void) {
    const registers = [this.registry];
    this.requests = new Counter({
      name: 'metaclaw_requests_total',
      help: 'Model requests by client API and the status the client got.',
      labelNames: ['route', 'status'],
      registers,
    });
    this.duration = new Histogram({
      name: 'metaclaw_request_duration_seconds',
      help: 'Whole model requests, from receipt to the last byte to the client.',
      labelNames: ['route'],
      buckets: LATENCY_BUCKETS,
      registers,
    });
    this.added = new Histogram({
      name: 'metaclaw_added_latency_seconds',
      help: 'Time the proxy spends on a request before it goes upstream (parsing, session, skill and memory injection).',
      labelNames: ['route'],
      buckets: LATENCY_BUCKETS,
      registers,
    });
    this.upstream = new Histogram({
      name: 'metaclaw_upstream_first_byte_seconds',
      help: "Time from forwarding to the upstream's first byte (or the RL policy's answer).",
      labelNames: ['route'],
      buckets: LATENCY_BUCKETS,
      registers,
    });
    this.injected = new Counter({
      name: 'metaclaw_injected_tokens_total',
      help: 'Tokens of skills and memories injected into requests.',
      labelNames: ['route'],
      registers,
    });

    // Each store gauge is read when scraped; a store that cannot answer (full disk, locked) leaves it empty.
    const fromStore = <L extends string>(name: string, help: string, labelNames: L[], read: (gauge: Gauge<L>) => Promise<void>) =>
      new Gauge<L>({
        name,
        help,
        labelNames,
        registers,
        async collect() {
          this.reset();
          try {
            await read(this);
          } catch (error) {
            onError(error);
          }
        },
      });
    fromStore('metaclaw_learning_queue_jobs', 'Learning jobs in the queue by state.', ['state'], async (gauge) => {
      for (const [state, count] of Object.entries(await figures.queue())) gauge.set({ state }, count);
    });
    fromStore('metaclaw_learning_jobs', 'Learning jobs kept in the queue table, by kind and outcome.', ['kind', 'status'], async (gauge) => {
      for (const { kind, status, count } of await figures.jobs()) gauge.set({ kind, status }, count);
    });
    fromStore('metaclaw_skills', 'Skills in the library, by category.', ['category'], async (gauge) => {
      for (const { category, count } of await figures.skills()) gauge.set({ category }, count);
    });
    fromStore('metaclaw_memories', 'Active memory units, by type.', ['type'], async (gauge) => {
      for (const { type, count } of await figures.memories()) gauge.set({ type }, count);
    });
    fromStore('metaclaw_judge_scores', 'RL samples by the score the judge gave (-1, 0, 1).', ['score'], async (gauge) => {
      for (const { score, count } of await figures.judgeScores()) gauge.set({ score: String(score) }, count);
    });
    fromStore('metaclaw_training_steps', 'RL training steps by outcome.', ['status'], async (gauge) => {
      for (const { status, count } of await figures.trainingSteps()) gauge.set({ status }, count);
    });
  }

  /** One model request ended. */
  observe(request: RequestObservation): void {
    const { route } = request;
    if (request.addedSeconds !== undefined) this.recentAdded.add(request.addedSeconds * 1000);
    this.requests.inc({ route, status: String(request.status) });
    this.duration.observe({ route }, request.seconds);
    if (request.addedSeconds !== undefined) this.added.observe({ route }, request.addedSeconds);
    if (request.upstreamSeconds !== undefined) this.upstream.observe({ route }, request.upstreamSeconds);
    if (request.injectedTokens > 0) this.injected.inc({ route }, request.injectedTokens);
  }

  /** Added latency over the latest requests (the dashboard's figure; a histogram's buckets are too coarse). */
  recentAddedLatency(): { samples: number; p50_ms: number | null; p95_ms: number | null } {
    const sorted = this.recentAdded.values().sort((a, b) => a - b);
    const at = (fraction: number) =>
      sorted.length === 0 ? null : Math.round((sorted[Math.min(sorted.length - 1, Math.floor(fraction * sorted.length))] ?? 0) * 1000) / 1000;
    return { samples: sorted.length, p50_ms: at(0.5), p95_ms: at(0.95) };
  }

  async text(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}

/** The latest N values, in a fixed array (no allocation per request). */
class RecentValues {
  private readonly slots: Float64Array;
  private next = 0;
  private filled = 0;

  constructor(size: number) {
    this.slots = new Float64Array(size);
  }

  add(value: number): void {
    this.slots[this.next] = value;
    this.next = (this.next + 1) % this.slots.length;
    if (this.filled < this.slots.length) this.filled++;
  }

  values(): number[] {
    return Array.from(this.slots.subarray(0, this.filled));
  }
}
