import type http from 'node:http';

/** A report section added by a part of the system (skills, memory) to BENCHMARKS.md. */
export interface ExtraScenarioResult {
  title: string;
  lines: string[];
  data: unknown;
}

export interface ScenarioContext {
  home: string;
  agent: http.Agent;
  small: string;
  scale: number;
  upstream: string;
  startProxy(name: string, upstream: string, config?: Record<string, unknown>): Promise<{ url: string; pid: number; home: string }>;
  sequential(url: string, body: string, count: number, agent: http.Agent): Promise<number[]>;
  interleaved(measure: (url: string) => Promise<number[]>, direct: string, proxy: string, rounds: number): Promise<{ added: { p50: number; p99: number }; proxy: { p50: number; p99: number }; direct: { p50: number; p99: number } }>;
  log(message: string): void;
}

/** Scenarios for retrieval and injection; each part of the system adds its own here. */
export async function extraScenarios(_context: ScenarioContext): Promise<ExtraScenarioResult[]> {
  return [];
}
