import { errorMessage } from '../errors.js';
import type { Logger } from '../logging/index.js';
import { appendToSystemPrompt } from './placement.js';
import { trimToContext } from './trim.js';
import type { Augmentation, ContextProvider, ContextRequest, ContextSection } from './types.js';

export const CONTEXT_OPEN = '<metaclaw-context>';
export const CONTEXT_CLOSE = '</metaclaw-context>';

/**
 * Builds the augmentation for one request: asks each provider (skills first, then memory: stable
 * text before volatile text), renders one delimited block and appends it to the system prompt.
 * Side turns get nothing. A provider that fails is skipped, logged and counted: the request goes on.
 * With `maxContextTokens` set, any request's oldest messages are then dropped until it fits.
 */
export class ContextPlanner {
  private failureCount = 0;
  private trimCount = 0;

  constructor(
    private readonly providers: readonly ContextProvider[],
    private readonly logger: Logger,
    /** max_context_tokens; 0 never trims. */
    private readonly maxContextTokens = 0,
  ) {}

  get failures(): number {
    return this.failureCount;
  }

  /** Requests whose oldest messages were dropped to fit max_context_tokens. */
  get trimmed(): number {
    return this.trimCount;
  }

  get providerNames(): string[] {
    return this.providers.map((provider) => provider.name);
  }

  async augment(request: ContextRequest): Promise<Augmentation> {
    const augmentation = await this.inject(request);
    if (this.maxContextTokens === 0) return augmentation;
    const trimmed = trimToContext(request.format, augmentation.body, this.maxContextTokens);
    if (!trimmed) return augmentation;
    this.trimCount++;
    this.logger.debug({ session: request.sessionId, dropped: trimmed.dropped }, 'dropped the oldest messages to fit max_context_tokens');
    return { ...augmentation, body: trimmed.body };
  }

  private async inject(request: ContextRequest): Promise<Augmentation> {
    if (request.turnType === 'side' || this.providers.length === 0) return { body: request.body, injected: null, failures: [] };
    const failures: Augmentation['failures'] = [];
    const results = await Promise.all(
      this.providers.map(async (provider) => {
        try {
          return await provider.provide(request);
        } catch (error) {
          this.failureCount++;
          failures.push({ provider: provider.name, error: errorMessage(error) });
          this.logger.error({ err: error, provider: provider.name, session: request.sessionId }, 'context provider failed; the request goes on without it');
          return undefined;
        }
      }),
    );
    const sections = results.filter((section): section is ContextSection => section !== undefined && section.text.trim() !== '');
    if (sections.length === 0) return { body: request.body, injected: null, failures };
    const text = renderBlock(sections);
    const { body, placement } = appendToSystemPrompt(request.format, request.body, text);
    return {
      body,
      injected: {
        placement,
        tokens: sections.reduce((sum, section) => sum + section.tokens, 0),
        sections: sections.map((section) => ({ provider: section.provider, tokens: section.tokens, details: section.details })),
        text,
      },
      failures,
    };
  }
}

function renderBlock(sections: readonly ContextSection[]): string {
  return `${CONTEXT_OPEN}\n${sections.map((section) => section.text.trim()).join('\n\n')}\n${CONTEXT_CLOSE}`;
}
