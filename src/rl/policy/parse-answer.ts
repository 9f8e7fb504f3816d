import { isRecord, parseJson, readString, toolCallId, type AssistantParts } from '../../upstream/index.js';

/**
 * A sampled answer's text, split the way Qwen3 (and other Hermes-format models) write it:
 * `<think>…</think>` reasoning first, then text with `<tool_call>{"name": …, "arguments": …}</tool_call>`
 * blocks. Each well-formed call gets a fresh `call_…` id; a block that is not a JSON call (or was
 * cut off by the token limit) stays in the text rather than being lost.
 */

const THINK_OPEN = '<think>';
const THINK_CLOSE = '</think>';
const TOOL_CALL = /<tool_call>\s*([\s\S]*?)\s*<\/tool_call>/g;

export function parseAnswer(decoded: string): AssistantParts {
  const { reasoning, rest } = splitReasoning(decoded);
  const toolCalls: AssistantParts['toolCalls'] = [];
  const text = rest.replace(TOOL_CALL, (block: string, body: string) => {
    const call = readCall(body);
    if (call === undefined) return block;
    toolCalls.push({ id: toolCallId(undefined), ...call });
    return '';
  });
  return { text: text.trim(), reasoning, toolCalls };
}

/**
 * Qwen3 opens with `<think>`, or the prompt already did (thinking-only models), so a lone
 * `</think>` also closes reasoning. An answer cut off inside its reasoning is all reasoning.
 */
function splitReasoning(decoded: string): { reasoning: string; rest: string } {
  const trimmed = decoded.replace(/^\s+/, '');
  const close = trimmed.indexOf(THINK_CLOSE);
  if (close !== -1 && !trimmed.slice(0, close).includes('<tool_call>')) {
    const head = trimmed.slice(0, close);
    const reasoning = head.startsWith(THINK_OPEN) ? head.slice(THINK_OPEN.length) : head;
    return { reasoning: reasoning.trim(), rest: trimmed.slice(close + THINK_CLOSE.length) };
  }
  if (trimmed.startsWith(THINK_OPEN)) return { reasoning: trimmed.slice(THINK_OPEN.length).trim(), rest: '' };
  return { reasoning: '', rest: decoded };
}

/** `{"name": "...", "arguments": {...}}`; arguments as an object are written back as JSON text. */
function readCall(body: string): { name: string; arguments: string } | undefined {
  const parsed = parseJson(body);
  if (!isRecord(parsed)) return undefined;
  const name = readString(parsed.name);
  if (name === undefined || name === '') return undefined;
  const args = parsed.arguments ?? parsed.parameters ?? {};
  return { name, arguments: typeof args === 'string' ? args : JSON.stringify(args) };
}
