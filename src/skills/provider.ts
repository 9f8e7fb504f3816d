import type { ContextProvider, ContextRequest, ContextSection } from '../context/index.js';
import type { SkillRetriever, RetrievedSkill } from './retrieval.js';
import { renderSkills, type RenderOptions } from './render.js';

/**
 * The skills part of each main turn's context: retrieve for the user's real request (plus the
 * two user messages before it, weighted less), render within the budget, and say what was chosen.
 */
export class SkillsContextProvider implements ContextProvider {
  readonly name = 'skills';

  constructor(
    private readonly retriever: SkillRetriever,
    private readonly render: RenderOptions,
    private readonly generation: () => number,
  ) {}

  provide(request: ContextRequest): ContextSection | undefined {
    if (request.userRequest.text === '') return undefined;
    return this.section(this.retriever.retrieve(request.userRequest.text, request.userRequest.earlier));
  }

  private section(retrieved: readonly RetrievedSkill[]): ContextSection | undefined {
    const rendered = renderSkills(retrieved, this.render);
    if (!rendered) return undefined;
    return { provider: this.name, text: rendered.text, tokens: rendered.tokens, details: { generation: this.generation(), skills: rendered.shown } };
  }
}
