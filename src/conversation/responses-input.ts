/**
 * A Responses API conversation (its items: earlier ones resolved from `previous_response_id`, then
 * the request's `input`) seen as chat messages, so session identity, the user's real request and
 * the tool results learning reads are found as in any other request. Only roles and text matter
 * here: a function call (or a freeform custom tool call, Codex's `exec`) is an (empty) assistant
 * message, its output a tool message (never the user's words); reasoning and other items are left out.
 */
export interface ConversationMessage {
  role: string;
  content: string | Array<{ type: 'text'; text: string }>;
}

const TEXT_PARTS = new Set(['input_text', 'output_text', 'text']);

export function responsesConversation(items: readonly unknown[]): ConversationMessage[] {
  const messages: ConversationMessage[] = [];
  for (const item of items) {
    if (typeof item !== 'object' || item === null) continue;
    const { type, role, content, output } = item as { type?: unknown; role?: unknown; content?: unknown; output?: unknown };
    if ((type === undefined || type === 'message') && typeof role === 'string') messages.push({ role, content: textContent(content) });
    else if (type === 'function_call' || type === 'custom_tool_call') messages.push({ role: 'assistant', content: '' });
    else if (type === 'function_call_output' || type === 'custom_tool_call_output') messages.push({ role: 'tool', content: textContent(output) });
  }
  return messages;
}

function textContent(content: unknown): ConversationMessage['content'] {
  if (typeof content === 'string') return content;
  const parts: Array<{ type: 'text'; text: string }> = [];
  if (!Array.isArray(content)) return parts;
  for (const part of content) {
    if (typeof part !== 'object' || part === null) continue;
    const { type, text } = part as { type?: unknown; text?: unknown };
    if (typeof type === 'string' && TEXT_PARTS.has(type) && typeof text === 'string') parts.push({ type: 'text', text });
  }
  return parts;
}
