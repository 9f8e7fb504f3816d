export { MemberDirectory, memberNameSchema, memberScope, type IssuedKey, type Member } from './members.js';
export { hashMemberKey, isMemberKeyShaped, newMemberKey } from './member-keys.js';
