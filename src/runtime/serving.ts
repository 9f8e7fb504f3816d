import type { Server } from 'node:http';
import type { UpstreamTarget } from '../config/index.js';
import { ConfigError } from '../errors.js';

/** What both runtimes (personal and team node) share about serving: listening, and describing an upstream. */

/** Listens on host:port; a port in use becomes a ConfigError that says what to do. */
export function listen(server: Server, host: string, port: number): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    server.once('error', (error: NodeJS.ErrnoException) => {
      reject(error.code === 'EADDRINUSE' ? new ConfigError(`Port ${port} on ${host} is already in use; choose another with --port or proxy.port.`) : error);
    });
    server.listen(port, host, () => resolve());
  });
}

export function describeTarget(target: UpstreamTarget) {
  return { name: target.name, base_url: target.baseUrl, format: target.format, model: target.model ?? null, key_source: target.keySource };
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
