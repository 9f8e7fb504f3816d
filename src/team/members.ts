import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import { TeamError } from '../errors.js';
import type { Db } from '../store/index.js';
import { hashMemberKey, isMemberKeyShaped, memberKeyHint, newMemberKey } from './member-keys.js';
import type { MemberStore } from '../store/ports.js';

export interface Member {
  readonly id: string;
  readonly name: string;
  readonly keyHint: string;
  readonly createdAt: number;
  readonly keyRotatedAt: number | null;
}

/** A member and the key that was just made for them: the only moment the key exists in clear. */
export interface IssuedKey {
  readonly member: Member;
  readonly key: string;
}

/** A member as stored (both engines): the key only as its hash. */
export interface MemberRow {
  id: string;
  name: string;
  key_hint: string;
  created_at: number;
  key_rotated_at: number | null;
}

/** Lower-case letters, digits, dot, dash and underscore: a name is part of a memory scope and of URLs. */
export const memberNameSchema = z
  .string()
  .trim()
  .toLowerCase()
  .regex(/^[a-z0-9][a-z0-9._-]{0,63}$/, 'a member name is 1–64 letters, digits, dots, dashes or underscores, starting with a letter or digit');

/** The memory scope a member's key fixes: the same one `X-User-Id: <name>` names. */
export function memberScope(member: Pick<Member, 'name'>): string {
  return `user:${member.name}`;
}

/**
 * The team's members, kept in the main database. The proxy looks a presented key up on every
 * request (one indexed read), so adding, removing or rotating takes effect at once on a running
 * proxy without a restart or a cache to invalidate.
 */
export class MemberDirectory implements MemberStore {
  private readonly statements;

  constructor(db: Db) {
    this.statements = {
      insert: db.prepare(`INSERT INTO team_members (id, name, key_hash, key_hint, created_at) VALUES (?, ?, ?, ?, ?)`),
      byName: db.prepare<[string], MemberRow>(`SELECT id, name, key_hint, created_at, key_rotated_at FROM team_members WHERE name = ?`),
      byKeyHash: db.prepare<[string], MemberRow>(`SELECT id, name, key_hint, created_at, key_rotated_at FROM team_members WHERE key_hash = ?`),
      all: db.prepare<[], MemberRow>(`SELECT id, name, key_hint, created_at, key_rotated_at FROM team_members ORDER BY name`),
      any: db.prepare<[], { found: number }>(`SELECT EXISTS (SELECT 1 FROM team_members) AS found`),
      remove: db.prepare<[string]>(`DELETE FROM team_members WHERE name = ?`),
      rotate: db.prepare<[string, string, number, string]>(`UPDATE team_members SET key_hash = ?, key_hint = ?, key_rotated_at = ? WHERE name = ?`),
    };
  }

  /** Adds a member with a new key. Refuses a name already taken. */
  add(name: string): IssuedKey {
    const parsed = parseName(name);
    if (this.statements.byName.get(parsed)) throw duplicateMember(parsed);
    const issued = issueMemberKey();
    this.statements.insert.run(issued.id, parsed, issued.keyHash, issued.keyHint, Date.now());
    return { member: this.require(parsed), key: issued.key };
  }

  /** Gives a member a new key; the old one stops working at once. */
  rotateKey(name: string): IssuedKey {
    const parsed = parseName(name);
    this.require(parsed);
    const issued = issueMemberKey();
    this.statements.rotate.run(issued.keyHash, issued.keyHint, Date.now(), parsed);
    return { member: this.require(parsed), key: issued.key };
  }

  /** Removes a member; their key stops working at once. Returns the member that was removed. */
  remove(name: string): Member {
    const member = this.require(parseName(name));
    this.statements.remove.run(member.name);
    return member;
  }

  list(): Member[] {
    return this.statements.all.all().map(toMember);
  }

  get(name: string): Member | undefined {
    const row = this.statements.byName.get(parseName(name));
    return row ? toMember(row) : undefined;
  }

  /** The member whose key this is, if any. */
  byKey(candidate: string | undefined): Member | undefined {
    if (!isMemberKeyShaped(candidate)) return undefined;
    const row = this.statements.byKeyHash.get(hashMemberKey(candidate));
    return row ? toMember(row) : undefined;
  }

  /** Whether the team has anyone: then every request needs a key. */
  hasMembers(): boolean {
    return this.statements.any.get()?.found === 1;
  }

  private require(name: string): Member {
    const row = this.statements.byName.get(name);
    if (!row) throw unknownMember(name);
    return toMember(row);
  }
}

/** A new member's id and key, and what the store keeps of the key. */
export function issueMemberKey(): { id: string; key: string; keyHash: string; keyHint: string } {
  const key = newMemberKey();
  return { id: `mbr_${randomBytes(8).toString('hex')}`, key, keyHash: hashMemberKey(key), keyHint: memberKeyHint(key) };
}

export function duplicateMember(name: string): TeamError {
  return new TeamError(`A member named ${name} already exists; use \`metaclaw team rotate-key ${name}\` for a new key.`);
}

export function unknownMember(name: string): TeamError {
  return new TeamError(`No member named ${name}; \`metaclaw team list\` shows the members.`);
}

export function parseName(name: string): string {
  const parsed = memberNameSchema.safeParse(name);
  if (!parsed.success) throw new TeamError(`Invalid member name ${JSON.stringify(name)}: ${parsed.error.issues[0]?.message ?? 'invalid'}.`);
  return parsed.data;
}

export function toMember(row: MemberRow): Member {
  return { id: row.id, name: row.name, keyHint: row.key_hint, createdAt: row.created_at, keyRotatedAt: row.key_rotated_at };
}
