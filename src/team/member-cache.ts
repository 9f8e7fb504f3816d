import type { MemberLookup } from '../proxy/auth.js';
import { hashMemberKey, isMemberKeyShaped } from './member-keys.js';
import { toMember, type Member, type MemberRow } from './members.js';

/** A member row with its key's hash: what a node needs to recognise keys without asking the store. */
export interface KeyedMemberRow extends MemberRow {
  key_hash: string;
}

/**
 * The team's members as one node last read them from a store it must not wait for on the request
 * path (the team store): a key is checked against this copy in memory. The node replaces it every
 * second or so (team-runtime), so a new, removed or rotated key takes effect on every node within
 * that; while the store is out of reach the last copy stands.
 */
export class MemberCache implements MemberLookup {
  private byHash = new Map<string, Member>();
  private loaded = false;

  /** Whether a copy was read at least once (until then nobody but the owner is recognised). */
  get ready(): boolean {
    return this.loaded;
  }

  replace(rows: readonly KeyedMemberRow[]): void {
    this.byHash = new Map(rows.map((row) => [row.key_hash, toMember(row)]));
    this.loaded = true;
  }

  byKey(candidate: string | undefined): Member | undefined {
    if (!isMemberKeyShaped(candidate)) return undefined;
    return this.byHash.get(hashMemberKey(candidate));
  }

  hasMembers(): boolean {
    return this.byHash.size > 0;
  }

  list(): Member[] {
    return [...this.byHash.values()].sort((a, b) => a.name.localeCompare(b.name));
  }
}
