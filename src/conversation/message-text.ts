/**
 * The plain text of a message's content in either API: a string, or the `text` of its text parts
 * (OpenAI `{type:'text'}` parts, Anthropic text blocks). Images and tool blocks contribute nothing.
 */
export function messageText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  const texts: string[] = [];
  for (const part of content) {
    if (typeof part === 'object' && part !== null && (part as { type?: unknown }).type === 'text') {
      const text = (part as { text?: unknown }).text;
      if (typeof text === 'string') texts.push(text);
    }
  }
  return texts.join('\n');
}
