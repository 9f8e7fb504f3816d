import { existsSync, readFileSync, rmSync } from 'node:fs';
import { writeFileAtomic } from '../shared/atomic-write.js';

export interface PidInfo {
  pid: number;
  host: string;
  port: number;
  startedAt: string;
  version: string;
  /** A node of a team store: the store's URL, password masked. */
  store?: string;
}

export function writePidFile(path: string, info: PidInfo): void {
  writeFileAtomic(path, `${JSON.stringify(info)}\n`, { mode: 0o600 });
}

export function readPidFile(path: string): PidInfo | undefined {
  if (!existsSync(path)) return undefined;
  try {
    const text = readFileSync(path, 'utf8').trim();
    // MetaClaw's pid files hold just the number.
    if (/^\d+$/.test(text)) return { pid: Number(text), host: '127.0.0.1', port: 30000, startedAt: '', version: '' };
    const parsed = JSON.parse(text) as Partial<PidInfo>;
    if (typeof parsed.pid !== 'number') return undefined;
    const info: PidInfo = {
      pid: parsed.pid,
      host: parsed.host ?? '127.0.0.1',
      port: parsed.port ?? 30000,
      startedAt: parsed.startedAt ?? '',
      version: parsed.version ?? '',
    };
    if (typeof parsed.store === 'string' && parsed.store !== '') info.store = parsed.store;
    return info;
  } catch {
    return undefined;
  }
}

/** Removes the pid file only if it still names `pid` (a newer instance may have replaced it). */
export function removePidFile(path: string, pid: number): void {
  const current = readPidFile(path);
  if (current && current.pid !== pid) return;
  rmSync(path, { force: true });
}

/**
 * Whether a process is alive. A zombie (exited, not yet reaped) counts as dead: on these machines
 * PID 1 reaps orphans only every few seconds, and `kill(pid, 0)` keeps succeeding meanwhile.
 */
export function isProcessAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
    return state !== 'Z' && state !== 'X';
  } catch {
    return true; // no /proc (macOS): trust kill(0)
  }
}
