import { randomBytes } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import type { IncomingHttpHeaders } from 'node:http';
import { writeFileAtomic } from '../shared/atomic-write.js';
import { Secret, single } from './auth.js';

/** The header that carries the admin token. */
export const ADMIN_HEADER = 'x-metaclaw-admin';

/**
 * What lets a caller work across memory scopes over HTTP. The token lives in
 * `$METACLAW_HOME/admin-token`, mode 0600: whoever can read it is the OS user who owns the install
 * (who can read the database file anyway). Wired agents are given `proxy.api_key`, never this, so the
 * proxy key alone does not open other scopes.
 */
export class AdminToken {
  private constructor(private readonly secret: Secret) {}

  /** Reads the token, or writes a new one when there is none, it is malformed, or others can read it. */
  static ensure(path: string): AdminToken {
    return new AdminToken(new Secret(readPrivateToken(path) ?? writeNewToken(path)));
  }

  matches(headers: IncomingHttpHeaders): boolean {
    return this.secret.matches(single(headers[ADMIN_HEADER])?.trim());
  }
}

const TOKEN = /^[0-9a-f]{64}$/;

function readPrivateToken(path: string): string | undefined {
  try {
    // A token others could read is no longer a secret: it is replaced.
    if (process.platform !== 'win32' && (statSync(path).mode & 0o077) !== 0) return undefined;
    const token = readFileSync(path, 'utf8').trim();
    return TOKEN.test(token) ? token : undefined;
  } catch {
    return undefined;
  }
}

function writeNewToken(path: string): string {
  const token = randomBytes(32).toString('hex');
  writeFileAtomic(path, `${token}\n`, { mode: 0o600 });
  return token;
}
