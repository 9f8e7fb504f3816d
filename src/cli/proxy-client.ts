import { readFileSync } from 'node:fs';
import type { LoadedConfig } from '../config/index.js';
import { errorMessage } from '../errors.js';
import { ADMIN_HEADER } from '../proxy/admin-token.js';
import { readPidFile } from '../runtime/pid-file.js';
import { baseUrl, CliExit } from './context.js';

/** Small HTTP helpers for CLI commands that talk to a running proxy. */

export interface ProxyCall {
  status: number;
  body: unknown;
}

export interface ProxyCallOptions {
  method?: string;
  apiKey?: string;
  /** extra request headers */
  headers?: Record<string, string>;
  /** sent as JSON */
  body?: unknown;
  timeoutMs?: number;
}

/** One call to the proxy's JSON API; the body comes back parsed when it is JSON. Network errors throw. */
export async function callJson(url: string, options: ProxyCallOptions = {}): Promise<ProxyCall> {
  const headers: Record<string, string> = { accept: 'application/json', ...options.headers };
  if (options.apiKey) headers['authorization'] = `Bearer ${options.apiKey}`;
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  const response = await fetch(url, {
    method: options.method ?? 'GET',
    headers,
    ...(options.body === undefined ? {} : { body: JSON.stringify(options.body) }),
    signal: AbortSignal.timeout(options.timeoutMs ?? 2_000),
  });
  const text = await response.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // keep the text
  }
  return { status: response.status, body };
}

export function getJson(url: string, options: { apiKey?: string; timeoutMs?: number } = {}): Promise<ProxyCall> {
  return callJson(url, options);
}

/** True when `/healthz` answers `{ok: true}`. */
export async function isHealthy(base: string, timeoutMs = 1_000): Promise<boolean> {
  try {
    const result = await getJson(`${base}/healthz`, { timeoutMs });
    return result.status === 200 && (result.body as { ok?: unknown })?.ok === true;
  } catch {
    return false;
  }
}

/** Where this config's proxy answers, or undefined when none does (the pid file's address first). */
export async function runningProxy(config: LoadedConfig): Promise<{ base: string; apiKey: string } | undefined> {
  const pid = readPidFile(config.paths.pidFile);
  const base = pid ? baseUrl(pid.host, pid.port) : baseUrl(config.values['proxy.host'], config.values['proxy.port']);
  if (!(await isHealthy(base, 2_000))) return undefined;
  return { base, apiKey: config.values['proxy.api_key'] };
}

/** The admin token the proxy wrote for this home (commands that change what serves the agent send it). */
export function adminHeaders(config: LoadedConfig): Record<string, string> {
  try {
    return { [ADMIN_HEADER]: readFileSync(config.paths.adminToken, 'utf8').trim() };
  } catch (error) {
    throw new CliExit(`Cannot read the admin token ${config.paths.adminToken} (${errorMessage(error)}); it is written by the running proxy.`);
  }
}
