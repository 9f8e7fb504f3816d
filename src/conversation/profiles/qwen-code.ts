import { isRecord, nonEmpty, stringField } from '../fields.js';
import { withCommonWrappers } from './common.js';
import type { ClientProfile } from './types.js';

/** The lines of the environment preamble: date, system, folders and the folder tree. */
const PREAMBLE_LINE = String.raw`(?:Today's date is|My operating system is|The project's temporary directory is|I'm currently working in the director|Here is the folder structure|Showing up to \d+ items|- \*\*[A-Za-z ]+:\*\*|\s+- (?:[A-Za-z]:)?[\\/~]|\s*[├└│]|(?:[A-Za-z]:)?[\\/][^\n]*[\\/](?=\n|$))[^\n]*`;

/**
 * "This is the Qwen Code. We are setting up the context for our chat." and the lines that follow:
 * the same for every run started on one day in one folder (Gemini CLI says "This is the Gemini CLI").
 */
const ENVIRONMENT_PREAMBLE = new RegExp(
  String.raw`(?:<session_context>\s*)?This is the [^.\n]{1,40}\. We are setting up the context for our chat\.(?:\n(?:${PREAMBLE_LINE})?)*(?:\s*</session_context>)?`,
  'g',
);

/**
 * Qwen Code and the Gemini CLI it derives from: `QwenCode/<version>` or `GeminiCLI/<version>`, no
 * session header, a first user message that is an environment preamble, and helper agents (memory
 * extraction, history compression, the next-speaker check) that reuse the conversation.
 */
export const qwenCode: ClientProfile = {
  name: 'qwen-code',
  userAgent: /^(?:QwenCode|GeminiCLI)\//i,
  systemPrompt: /You are Qwen Code|interactive CLI agent specializing in software engineering tasks/,
  // DashScope requests carry `metadata.sessionId`; other providers get nothing.
  sessionId: (_headers, body) => {
    const id = isRecord(body['metadata']) ? nonEmpty(stringField(body['metadata'], 'sessionId')) : undefined;
    return id ? { id, source: 'body' } : undefined;
  },
  sideRequests: [
    { kind: 'memory', system: /You are now acting as the managed memory/, user: /^Managed memory directory:/ },
    { kind: 'compaction', system: /You are the component that summarizes internal chat history/ },
    { kind: 'classifier', user: /^Analyze \*only\* the content and structure of your immediately preceding response/ },
  ],
  wrappers: withCommonWrappers({ blocks: [ENVIRONMENT_PREAMBLE], parts: [] }),
};
