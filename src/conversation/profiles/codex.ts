import type { IncomingHttpHeaders } from 'node:http';
import { header, isRecord, nonEmpty, stringField } from '../fields.js';
import { withCommonWrappers } from './common.js';
import type { ClientProfile, ClientSessionId } from './types.js';

/** Where Codex names its conversation, newest versions first. */
const SESSION_HEADERS = ['session-id', 'thread-id', 'conversation_id', 'conversation-id'];

/**
 * OpenAI's Codex CLI: `codex_exec/<version>` or `codex_cli_rs/<version>`, session and thread ids in
 * headers (and `client_metadata.session_id` in Responses bodies), and its environment and AGENTS.md
 * sent as user messages of their own.
 */
export const codex: ClientProfile = {
  name: 'codex',
  userAgent: /^codex[_-]/i,
  headers: [{ name: 'originator', value: /^codex/i }],
  systemPrompt: /You are Codex, based on|You are a coding agent running in the Codex CLI/,
  sessionId: codexSessionId,
  sideRequests: [{ kind: 'compaction', system: /CONTEXT CHECKPOINT COMPACTION/, user: /^You are performing a CONTEXT CHECKPOINT COMPACTION/ }],
  wrappers: withCommonWrappers({
    blocks: [
      /<(environment_context|user_instructions|permissions instructions|collaboration_mode|skills_instructions|apps_instructions|personality_spec|turn_aborted|subagent_notification)>[\s\S]*?<\/\1>/g,
      /# AGENTS\.md instructions for [^\n]*\n+<INSTRUCTIONS>[\s\S]*?<\/INSTRUCTIONS>/g,
    ],
    parts: [],
  }),
};

function codexSessionId(headers: IncomingHttpHeaders, body: Record<string, unknown>): ClientSessionId | undefined {
  for (const name of SESSION_HEADERS) {
    const id = nonEmpty(header(headers, name));
    if (id) return { id, source: 'header' };
  }
  const metadata = isRecord(body['client_metadata']) ? body['client_metadata'] : undefined;
  const id = nonEmpty(metadata ? stringField(metadata, 'session_id') : undefined) ?? nonEmpty(stringField(body, 'prompt_cache_key'));
  return id ? { id, source: 'body' } : undefined;
}
