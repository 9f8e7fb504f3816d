import { randomBytes } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import type { IncomingHttpHeaders } from 'node:http';
import { RequestError } from '../errors.js';
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

  /**
   * Whether the request holds the admin token: false when it sends no X-MetaClaw-Admin header. A
   * header that does not match (a stale copy, an empty `$(cat …)`, a typo) is a 401 rather than a
   * request without it: read as none, it answered from the caller's own scope (a 404 for another
   * scope's unit, an export of one scope instead of every one) and the mistake went unseen.
   */
  grants(headers: IncomingHttpHeaders): boolean {
    const presented = single(headers[ADMIN_HEADER]);
    if (presented === undefined) return false;
    if (this.secret.matches(presented.trim())) return true;
    throw new RequestError(
      401,
      'authentication_error',
      'admin_token_invalid',
      "The X-MetaClaw-Admin header does not match the admin token in $METACLAW_HOME/admin-token: send that file's current content (it is written anew when missing, malformed or readable by other users), or leave the header out to work in this request's own memory scope.",
    );
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
