import type { ContextProvider, ContextRequest, ContextSection } from '../context/index.js';
import { cleanUserText, messageText } from '../conversation/index.js';
import type { SkillRetriever, RetrievedSkill } from './retrieval.js';
import { renderSkills, type RenderOptions } from './render.js';

/**
 * The skills part of each main turn's context: retrieve for the user's real request (plus the
 * previous user messages, weighted less), render within the budget, and say what was chosen.
 */
export class SkillsContextProvider implements ContextProvider {
  readonly name = 'skills';

  constructor(
    private readonly retriever: SkillRetriever,
    private readonly render: RenderOptions,
    private readonly generation: () => number,
  ) {}

  provide(request: ContextRequest): ContextSection | undefined | Promise<ContextSection | undefined> {
    if (request.userRequest.text === '') return undefined;
    const context = recentUserMessages(request.body, request.userRequest.messageIndex);
    const retrieved = this.retriever.retrieve(request.userRequest.text, context);
    return Array.isArray(retrieved) ? this.section(retrieved) : retrieved.then((items) => this.section(items));
  }

  private section(retrieved: readonly RetrievedSkill[]): ContextSection | undefined {
    const rendered = renderSkills(retrieved, this.render);
    if (!rendered) return undefined;
    return { provider: this.name, text: rendered.text, tokens: rendered.tokens, details: { generation: this.generation(), skills: rendered.shown } };
  }
}

/** The two user messages before the current request, wrappers removed: the conversation's recent topic. */
function recentUserMessages(body: Record<string, unknown>, currentIndex: number): string {
  const messages = Array.isArray(body['messages']) ? (body['messages'] as Array<{ role?: unknown; content?: unknown }>) : [];
  const found: string[] = [];
  for (let index = currentIndex - 1; index >= 0 && found.length < 2; index--) {
    const message = messages[index];
    if (message?.role !== 'user') continue;
    const text = cleanUserText(messageText(message.content));
    if (text) found.push(text.slice(0, 1000));
  }
  return found.join('\n');
}
