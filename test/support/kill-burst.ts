import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ProxyHandle } from './proxy.js';

export interface BurstOptions {
  /** How many requests the burst sends in all (eight at a time). */
  total: number;
  /** The proxy is killed once this many have been answered. */
  killAfter: number;
  /** The `index`-th request's body, and its headers beside the content type. */
  request: (index: number) => { body: unknown; headers?: Record<string, string> };
  /** Whether a 200 body is the answer to the `index`-th request. */
  answers: (body: any, index: number) => boolean;
}

/**
 * Sends a burst of chat completions to the proxy, eight in flight at any moment, and kill -9s its
 * process mid-burst, once `killAfter` have been answered. Returns the request ids of the answered
 * ones, after asserting that the kill came mid-burst (before every request was answered).
 */
export async function killMidBurst(proxy: ProxyHandle, options: BurstOptions): Promise<string[]> {
  const pid = (JSON.parse(readFileSync(join(proxy.home, 'metaclaw.pid'), 'utf8')) as { pid: number }).pid;
  const answered: string[] = [];
  let next = 0;
  let killed = false;
  const worker = async () => {
    while (next < options.total) {
      const index = next++;
      const { body, headers = {} } = options.request(index);
      try {
        const response = await fetch(`${proxy.url}/v1/chat/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...headers },
          body: JSON.stringify(body),
        });
        const answer = await response.json();
        if (response.status === 200 && options.answers(answer, index)) answered.push(response.headers.get('x-metaclaw-request-id')!);
      } catch {
        // the proxy is gone: this request was not answered
      }
      if (answered.length >= options.killAfter && !killed) {
        killed = true;
        process.kill(pid, 'SIGKILL');
      }
    }
  };
  await Promise.all(Array.from({ length: 8 }, worker));
  assert.ok(killed && answered.length >= options.killAfter && answered.length < options.total, `killed mid-burst after ${answered.length} answers`);
  return answered;
}
