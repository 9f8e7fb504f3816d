import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after } from 'node:test';
import { loadConfig, type LoadedConfig } from '../../src/config/index.js';
import { tempHome } from './proxy.js';

/** Temp MetaClaw homes holding a given config.yaml, removed after the test file; `load` reads one as the proxy would. */
export function configHomes(prefix: string): { home: (yaml?: string | Buffer) => string; load: (folder: string) => LoadedConfig } {
  const homes: string[] = [];
  after(() => {
    for (const folder of homes) rmSync(folder, { recursive: true, force: true });
  });
  return {
    home: (yaml) => {
      const folder = tempHome(prefix);
      homes.push(folder);
      if (yaml !== undefined) writeFileSync(join(folder, 'config.yaml'), yaml);
      return folder;
    },
    load: (folder) => loadConfig({ env: { METACLAW_HOME: folder } }),
  };
}
