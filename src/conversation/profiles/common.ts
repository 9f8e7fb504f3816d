import type { UserTextWrappers } from './types.js';

/**
 * Stripped from every client's user text: context blocks injected by MetaClaw itself or by memory
 * plugins, and `<system-reminder>` blocks, the convention of Claude Code and of the agents built
 * like it (Claude Agent SDK apps, opencode). Nobody types either.
 */
export const COMMON_WRAPPERS: UserTextWrappers = {
  blocks: [/<(metaclaw-[a-z-]+|relevant-memories|relevant_memories|memories)\b[^>]*>[\s\S]*?<\/\1>/g, /<system-reminder>[\s\S]*?(?:<\/system-reminder>|$)/g],
  parts: [],
};

/** The common wrappers, then a client's own (an envelope anchored at the start is found once injected blocks are gone). */
export function withCommonWrappers(own: UserTextWrappers): UserTextWrappers {
  return { blocks: [...COMMON_WRAPPERS.blocks, ...own.blocks], parts: [...COMMON_WRAPPERS.parts, ...own.parts] };
}
