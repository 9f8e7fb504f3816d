import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { waitFor } from './proxy.js';

/**
 * The first line of a proxy's log (`$METACLAW_HOME/logs/metaclaw.log`, written at least every half
 * second) that holds `text` and passes `accept`, parsed, once it is there.
 */
export function logLineWith(home: string, text: string, accept: (line: Record<string, unknown>) => boolean = () => true): Promise<Record<string, unknown>> {
  return waitFor(() => {
    const log = join(home, 'logs', 'metaclaw.log');
    if (!existsSync(log)) return undefined;
    for (const line of readFileSync(log, 'utf8').split('\n')) {
      if (!line.includes(text)) continue;
      const parsed = JSON.parse(line) as Record<string, unknown>;
      if (accept(parsed)) return parsed;
    }
    return undefined;
  });
}
