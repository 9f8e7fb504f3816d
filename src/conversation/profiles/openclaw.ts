import { withCommonWrappers } from './common.js';
import type { ClientProfile, UserTextWrappers } from './types.js';

/**
 * OpenClaw's envelope: the `[Sun 2026-11-29 19:50 UTC]` prefix and `Runtime:` line around the
 * user's words, its internal-context carrier message, and channel `(untrusted metadata)` blocks.
 */
export const OPENCLAW_WRAPPERS: UserTextWrappers = {
  blocks: [
    /<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>[\s\S]*?(?:<<<END_OPENCLAW_INTERNAL_CONTEXT>>>|$)/g,
    /(?:^|\n)[A-Za-z][A-Za-z ]{0,40} \(untrusted metadata\):\s*```[a-z]*\n[\s\S]*?```[ \t]*/g,
    /(?:^|\n)Runtime: [^\n]*(?=\n|$)/g,
    /^\s*\[(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) \d{4}-\d{2}-\d{2} \d{1,2}:\d{2}(?::\d{2})?(?: [^\]\n]{1,40})?\]\s*/,
  ],
  parts: [],
};

/** Its session id is the `Runtime: … sessionId=…` line, read for every client (signals.ts). */
export const openclaw: ClientProfile = {
  name: 'openclaw',
  userAgent: /\bopenclaw\b/i,
  systemPrompt: /<!-- openclaw:|running inside OpenClaw/,
  sideRequests: [],
  wrappers: withCommonWrappers(OPENCLAW_WRAPPERS),
};
