/** Latency percentiles for the benchmark reports. */
export interface LatencySummary {
  count: number;
  p50: number;
  p90: number;
  p99: number;
  mean: number;
}

export function summarize(samples: readonly number[]): LatencySummary {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
  return {
    count: sorted.length,
    p50: round3(at(0.5)),
    p90: round3(at(0.9)),
    p99: round3(at(0.99)),
    mean: round3(sorted.reduce((sum, value) => sum + value, 0) / sorted.length),
  };
}

export function round3(value: number): number {
  return Math.round(value * 1000) / 1000;
}
