import { createHash, randomBytes } from 'node:crypto';

/** Member keys look like `mcm_` + 43 base64url characters (256 random bits). */
const PREFIX = 'mcm_';
const SHAPE = /^mcm_[A-Za-z0-9_-]{43}$/;

export function newMemberKey(): string {
  return PREFIX + randomBytes(32).toString('base64url');
}

/** Whether a presented credential could be a member key (anything else is never looked up). */
export function isMemberKeyShaped(candidate: string | undefined): candidate is string {
  return candidate !== undefined && SHAPE.test(candidate);
}

/**
 * What the store keeps of a key. A key has 256 bits of entropy, so a slow password hash would add
 * nothing but per-request latency: SHA-256 cannot be reversed or guessed at that size.
 */
export function hashMemberKey(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex');
}

/** The first characters of a key, enough to tell two keys apart in a list, far too few to use. */
export function memberKeyHint(key: string): string {
  return `${key.slice(0, PREFIX.length + 6)}…`;
}
