import type pg from 'pg';
import { z } from 'zod';
import type { KeyedMemberRow } from '../../team/member-cache.js';
import { duplicateMember, issueMemberKey, memberScope, parseName, toMember, unknownMember, type IssuedKey, type Member } from '../../team/members.js';
import { forgetPgScope, type ForgottenScope } from './forget-scope.js';
import { inTransaction } from './transaction.js';
import type { MemberStore } from '../ports.js';

const memberRow = z.object({
  id: z.string(),
  name: z.string(),
  key_hash: z.string(),
  key_hint: z.string(),
  created_at: z.coerce.number(),
  key_rotated_at: z.coerce.number().nullable(),
});

const COLUMNS = 'id, name, key_hash, key_hint, created_at, key_rotated_at';

/**
 * The team's members in the team store: what `metaclaw team …` changes when config names a store,
 * and what every node reads into its MemberCache. Same rules as the personal store's
 * MemberDirectory (team/members.ts): names parsed alike, keys shown once and kept as their hash.
 */
export class PgMemberDirectory implements MemberStore {
  constructor(private readonly pool: pg.Pool) {}

  async add(name: string): Promise<IssuedKey> {
    const parsed = parseName(name);
    const issued = issueMemberKey();
    const inserted = await this.pool.query(
      `INSERT INTO team_members (id, name, key_hash, key_hint, created_at) VALUES ($1, $2, $3, $4, $5) ON CONFLICT (name) DO NOTHING RETURNING ${COLUMNS}`,
      [issued.id, parsed, issued.keyHash, issued.keyHint, Date.now()],
    );
    const row: unknown = inserted.rows[0];
    if (!row) throw duplicateMember(parsed);
    return { member: toMember(memberRow.parse(row)), key: issued.key };
  }

  async rotateKey(name: string): Promise<IssuedKey> {
    const parsed = parseName(name);
    const issued = issueMemberKey();
    const updated = await this.pool.query(`UPDATE team_members SET key_hash = $1, key_hint = $2, key_rotated_at = $3 WHERE name = $4 RETURNING ${COLUMNS}`, [
      issued.keyHash,
      issued.keyHint,
      Date.now(),
      parsed,
    ]);
    const row: unknown = updated.rows[0];
    if (!row) throw unknownMember(parsed);
    return { member: toMember(memberRow.parse(row)), key: issued.key };
  }

  async remove(name: string, db: Pick<pg.Pool, 'query'> = this.pool): Promise<Member> {
    const parsed = parseName(name);
    const removed = await db.query(`DELETE FROM team_members WHERE name = $1 RETURNING ${COLUMNS}`, [parsed]);
    const row: unknown = removed.rows[0];
    if (!row) throw unknownMember(parsed);
    return toMember(memberRow.parse(row));
  }

  /**
   * Removes a member and forgets their memory scope in one transaction: should forgetting fail, the
   * member stays, key and all, and the command can be run again.
   */
  async removeAndForget(name: string): Promise<{ member: Member; forgotten: ForgottenScope }> {
    return inTransaction(this.pool, async (client) => {
      const member = await this.remove(name, client);
      return { member, forgotten: await forgetPgScope(this.pool, client, memberScope(member)) };
    });
  }

  async list(): Promise<Member[]> {
    return (await this.rows()).map(toMember);
  }

  async hasMembers(): Promise<boolean> {
    return (await this.pool.query('SELECT 1 FROM team_members LIMIT 1')).rowCount !== 0;
  }

  /** Every member with their key's hash, for a node's MemberCache. */
  async rows(): Promise<KeyedMemberRow[]> {
    const result = await this.pool.query(`SELECT ${COLUMNS} FROM team_members ORDER BY name`);
    return result.rows.map((row) => memberRow.parse(row));
  }
}
