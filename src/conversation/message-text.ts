/**
 * The plain text of a message's content in either API: a string, or the `text` of its text parts
 * (OpenAI `{type:'text'}` parts, Anthropic text blocks, Responses `input_text` parts). Images and
 * tool blocks contribute nothing.
 */
export function messageText(content: unknown): string {
  return typeof content === 'string' ? content : textParts(content).join('\n');
}

/** The texts of a message's content, part by part (a string is one part). */
export function textParts(content: unknown): string[] {
  if (typeof content === 'string') return [content];
  if (!Array.isArray(content)) return [];
  const texts: string[] = [];
  for (const part of content) {
    if (typeof part !== 'object' || part === null) continue;
    const { type, text } = part as { type?: unknown; text?: unknown };
    if ((type === 'text' || type === 'input_text') && typeof text === 'string') texts.push(text);
  }
  return texts;
}
