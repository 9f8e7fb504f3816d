import type { IncomingHttpHeaders } from 'node:http';

export type ClientProfileName = 'openclaw' | 'claude-code' | 'codex' | 'qwen-code' | 'opencode' | 'generic';

/** What a side request does for the client: none of it is the user's turn. */
export type SideRequestKind = 'title' | 'summary' | 'compaction' | 'memory' | 'classifier' | 'quota';

/** A request the client makes for itself, recognised by its prompt. */
export interface SideRequestSign {
  kind: SideRequestKind;
  /** Matched against the start of the system prompt. */
  system?: RegExp;
  /** Matched against the start of the last user message, as sent. */
  user?: RegExp;
}

/** What a client puts around the words the user typed. */
export interface UserTextWrappers {
  /** Removed wherever they appear in a user message's text. */
  blocks: readonly RegExp[];
  /** A text part (or a whole string message) that begins like this is the client's, not the user's. */
  parts: readonly RegExp[];
}

export interface ClientSessionId {
  id: string;
  source: 'header' | 'body';
}

/**
 * What MetaClaw knows about one agent client family: how it names itself, where it keeps its own
 * session id, which of its requests are side requests, and what it wraps around the user's words.
 * Data where possible; only the session id needs code, because each client hides it differently.
 */
export interface ClientProfile {
  readonly name: ClientProfileName;
  /** How the client names itself in `User-Agent`. */
  readonly userAgent?: RegExp;
  /** Headers only this client sends (with the value it gives them, when that is what tells). */
  readonly headers?: ReadonlyArray<{ name: string; value?: RegExp }>;
  /** A phrase its system prompts carry near their start. */
  readonly systemPrompt?: RegExp;
  /** The client's own id for the conversation, when it sends one. */
  readonly sessionId?: (headers: IncomingHttpHeaders, body: Record<string, unknown>) => ClientSessionId | undefined;
  readonly sideRequests: readonly SideRequestSign[];
  readonly wrappers: UserTextWrappers;
}
