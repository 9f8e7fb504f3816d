import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { AuthenticationError, PermissionError } from '../errors.js';
import { isLoopbackHost } from '../shared/loopback.js';
import type { Member } from '../team/index.js';
import type { ClientCredentials } from '../upstream/index.js';

/** How the proxy finds team members by key (team/members.ts). */
export interface MemberLookup {
  byKey(candidate: string | undefined): Member | undefined;
  hasMembers(): boolean;
}

/** Who sent a request: the owner (the proxy key, or no key on loopback), or a team member. */
export interface Caller {
  /** The client's own credentials minus any MetaClaw key, so no MetaClaw key ever travels upstream. */
  readonly credentials: ClientCredentials;
  readonly member?: Member;
}

/**
 * Checks the proxy key (when one is configured) and team members' keys in constant time, and
 * returns the client's own credentials minus the key it used. Once the team has a member, every
 * request needs a key: without one, anyone on this machine could send as the owner.
 */
export class ProxyAuth {
  private readonly key: Secret | undefined;
  /**
   * What a browser holds once it signed in to the dashboard with the proxy key (a cookie: pages
   * cannot send headers). Random per process, so a restart signs every browser out and the key
   * itself never sits in a cookie jar.
   */
  private readonly browserToken = randomBytes(32).toString('base64url');
  private readonly browserSecret = new Secret(this.browserToken);

  constructor(
    apiKey: string,
    private readonly members?: MemberLookup,
    /** Browser origins allowed to change things (`proxy.allowed_origins`). */
    private readonly allowedOrigins: readonly string[] = [],
  ) {
    this.key = apiKey === '' ? undefined : new Secret(apiKey);
  }

  get required(): boolean {
    return this.key !== undefined || (this.members?.hasMembers() ?? false);
  }

  /** The credentials to forward; throws like `identify`. */
  check(headers: IncomingHttpHeaders, method: string): ClientCredentials {
    return this.identify(headers, method).credentials;
  }

  /**
   * Throws AuthenticationError when a key is required and none of the accepted headers carries it;
   * without a key, PermissionError when the request names a host that is not this machine's loopback;
   * PermissionError, key or not, for a request that changes something sent by a web page of another origin.
   */
  identify(headers: IncomingHttpHeaders, method: string): Caller {
    checkBrowserOrigin(method, headers, this.allowedOrigins);
    const authorization = single(headers['authorization']);
    const apiKey = single(headers['x-api-key']);
    const metaclawKey = single(headers['x-metaclaw-api-key']);
    const credentials: ClientCredentials = {};
    if (authorization) credentials.authorization = authorization;
    if (apiKey) credentials.apiKey = apiKey;
    const bearer = authorization?.match(/^Bearer\s+(.+)$/i)?.[1]?.trim();

    if (this.key) {
      if (this.matches(metaclawKey)) return { credentials };
      if (this.browserSecret.matches(cookieValue(headers.cookie, BROWSER_COOKIE))) return { credentials };
      if (this.matches(bearer)) {
        delete credentials.authorization;
        return { credentials };
      }
      if (this.matches(apiKey)) {
        delete credentials.apiKey;
        return { credentials };
      }
    }
    if (this.members) {
      const byMetaclawKey = this.members.byKey(metaclawKey);
      if (byMetaclawKey) return { credentials, member: byMetaclawKey };
      const byBearer = this.members.byKey(bearer);
      if (byBearer) {
        delete credentials.authorization;
        return { credentials, member: byBearer };
      }
      const byApiKey = this.members.byKey(apiKey);
      if (byApiKey) {
        delete credentials.apiKey;
        return { credentials, member: byApiKey };
      }
    }
    if (!this.key) {
      if (this.members?.hasMembers()) {
        throw new AuthenticationError('This proxy serves a team: send your member key (Authorization: Bearer <key> or x-api-key), or the proxy key.');
      }
      checkLoopbackHost(single(headers.host));
      return { credentials };
    }
    throw new AuthenticationError();
  }

  /** The browser cookie's value for a correct proxy key (dashboard sign-in); undefined for a wrong one. */
  browserTokenFor(key: string): string | undefined {
    return this.matches(key) ? this.browserToken : undefined;
  }

  private matches(candidate: string | undefined): boolean {
    return this.key?.matches(candidate) ?? false;
  }
}

/**
 * Without a key the proxy trusts whoever can reach 127.0.0.1, which a web page can too through DNS
 * rebinding (its own name made to resolve to 127.0.0.1): the browser then sends that name as Host.
 * Every client on this machine names a loopback host (or none, in HTTP/1.0), so anything else is refused.
 */
function checkLoopbackHost(host: string | undefined): void {
  if (host === undefined || host === '' || isLoopbackHost(hostName(host))) return;
  throw new PermissionError(
    'host_not_allowed',
    `This proxy has no key, so it answers only to a loopback name (localhost, 127.0.0.1, [::1]); the host ${JSON.stringify(host.slice(0, 100))} was refused. Set proxy.api_key to serve other names.`,
  );
}

/**
 * A web page of another origin can make the browser send a POST that needs no CORS preflight
 * (`fetch(url, {method: 'POST', mode: 'no-cors', body})`, a form): it cannot read the answer, but
 * the request is served. Without a key that is any page the user opens (loopback is reachable from
 * every page), with one any page of the same site (another port of this host) once the dashboard
 * cookie is set. Such a request would write a standing instruction into memory, change a skill, or
 * spend the upstream key. Browsers name the page's origin (`Origin`, or at least `Sec-Fetch-Site`)
 * on every such request and agents never do, so a request that changes something (not GET, HEAD or
 * OPTIONS) from another origin is refused; reads stay open to links (the browser keeps their answers
 * from the page).
 */
function checkBrowserOrigin(method: string, headers: IncomingHttpHeaders, allowed: readonly string[]): void {
  if (method === 'GET' || method === 'HEAD' || method === 'OPTIONS') return;
  const origin = single(headers.origin);
  if (origin !== undefined && allowed.some((entry) => entry.replace(/\/+$/, '').toLowerCase() === origin.toLowerCase())) return;
  const site = single(headers['sec-fetch-site']);
  if (origin === undefined ? site === undefined || site === 'same-origin' || site === 'none' : originHost(origin) === single(headers.host)?.toLowerCase())
    return;
  const from = origin === undefined ? `a ${site} page` : `a page of ${JSON.stringify(origin.slice(0, 100))}`;
  throw new PermissionError(
    'origin_not_allowed',
    `This request was sent by ${from}, not by the proxy's own dashboard: a web page may not change memory or skills, or send model requests, through this proxy. List the origin in proxy.allowed_origins if it is a client of yours.`,
  );
}

/** The host (and port) an Origin header names, lowercased; undefined for `null` and anything unparsable. */
function originHost(origin: string): string | undefined {
  try {
    const url = new URL(origin);
    return url.protocol === 'http:' || url.protocol === 'https:' ? url.host.toLowerCase() : undefined;
  } catch {
    return undefined;
  }
}

/** The name part of a Host header: "[::1]:30000" → "::1", "localhost:30000" → "localhost". */
function hostName(host: string): string {
  return host.startsWith('[') ? host.slice(1, host.indexOf(']')) : host.replace(/:\d*$/, '');
}

/** The cookie a signed-in dashboard browser sends (HttpOnly, SameSite=Strict). */
export const BROWSER_COOKIE = 'metaclaw_ui';

function cookieValue(header: string | undefined, name: string): string | undefined {
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const at = part.indexOf('=');
    if (at !== -1 && part.slice(0, at).trim() === name) return part.slice(at + 1).trim();
  }
  return undefined;
}

/** A secret compared in constant time (by SHA-256 digest, so neither content nor length leaks). */
export class Secret {
  private readonly digest: Buffer;

  constructor(value: string) {
    this.digest = digest(value);
  }

  matches(candidate: string | undefined): boolean {
    if (!candidate) return false;
    return timingSafeEqual(digest(candidate), this.digest);
  }
}

function digest(value: string): Buffer {
  return createHash('sha256').update(value, 'utf8').digest();
}

export function single(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}
