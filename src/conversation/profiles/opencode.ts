import { withCommonWrappers } from './common.js';
import type { ClientProfile } from './types.js';

/**
 * opencode (sst): `x-session-id: ses_…` once per run, a title-generation request at the start of
 * each run and summaries and compaction later, each with a system prompt of its own.
 */
export const opencode: ClientProfile = {
  name: 'opencode',
  userAgent: /\bopencode\//i,
  headers: [{ name: 'x-session-id', value: /^ses_/ }],
  systemPrompt: /You are opencode|You are OpenCode/,
  // Its session id is the `x-session-id` header every client may send (signals.ts).
  sideRequests: [
    { kind: 'title', system: /You are a title generator\. You output ONLY a thread title/ },
    { kind: 'summary', system: /Summarize what was done in this conversation/ },
    { kind: 'compaction', system: /You are summarizing a conversation for continuation|You are a helpful AI assistant tasked with summarizing conversations/ },
    { kind: 'compaction', user: /^Provide a detailed prompt for continuing our conversation above/ },
  ],
  // Files the user attached reach the model as the text of a tool call opencode made itself.
  wrappers: withCommonWrappers({ blocks: [], parts: [/^Called the \w+ tool with the following input:/] }),
};
