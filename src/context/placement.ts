import type { RequestFormat } from '../types/index.js';

/**
 * Appends `text` to the system prompt without touching anything before it, so the provider's
 * prompt cache over the agent's own (stable) prefix keeps hitting. Returns a new body; the input
 * is not modified. A Responses request's system prompt is its `instructions`.
 */
export function appendToSystemPrompt(
  format: RequestFormat,
  body: Record<string, unknown>,
  text: string,
): { body: Record<string, unknown>; placement: 'system_append' | 'system_new' } {
  if (format === 'responses') return appendInstructions(body, text);
  return format === 'anthropic' ? appendAnthropic(body, text) : appendOpenAI(body, text);
}

function appendInstructions(body: Record<string, unknown>, text: string) {
  const instructions = body['instructions'];
  if (typeof instructions === 'string' && instructions !== '')
    return { body: { ...body, instructions: `${instructions}\n\n${text}` }, placement: 'system_append' as const };
  return { body: { ...body, instructions: text }, placement: 'system_new' as const };
}

function appendAnthropic(body: Record<string, unknown>, text: string) {
  const system = body['system'];
  if (typeof system === 'string' && system !== '') return { body: { ...body, system: `${system}\n\n${text}` }, placement: 'system_append' as const };
  if (Array.isArray(system) && system.length > 0)
    return { body: { ...body, system: [...(system as unknown[]), { type: 'text', text }] }, placement: 'system_append' as const };
  return { body: { ...body, system: text }, placement: 'system_new' as const };
}

function appendOpenAI(body: Record<string, unknown>, text: string) {
  const messages = Array.isArray(body['messages']) ? (body['messages'] as Array<Record<string, unknown>>) : [];
  // The last message of the leading run of system/developer messages is "the" system prompt.
  let target = -1;
  for (let index = 0; index < messages.length; index++) {
    const role = messages[index]?.['role'];
    if (role === 'system' || role === 'developer') target = index;
    else break;
  }
  if (target === -1) {
    return { body: { ...body, messages: [{ role: 'system', content: text }, ...messages] }, placement: 'system_new' as const };
  }
  const original = messages[target]!;
  const content = original['content'];
  let updated: unknown;
  if (Array.isArray(content)) updated = [...(content as unknown[]), { type: 'text', text }];
  else if (typeof content === 'string' && content !== '') updated = `${content}\n\n${text}`;
  else updated = text;
  const next = messages.slice();
  next[target] = { ...original, content: updated };
  return { body: { ...body, messages: next }, placement: 'system_append' as const };
}
