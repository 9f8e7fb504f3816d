import { Template } from '@huggingface/jinja';
import * as tokenizers from '@huggingface/tokenizers';
import { errorMessage } from '../../errors.js';
import type { OpenAIChatRequest } from '../../types/index.js';
import { SegmentEncoder } from './segment-cache.js';
import { templateInput, type TemplateMessage } from './template-input.js';
import { tokenText, TokenizerUnavailableError, type TokenizerFiles } from './tokenizer-files.js';

/** A prompt rendered once: the text and the ids sent to the sampler, from the same render. */
export interface RenderedPrompt {
  text: string;
  tokens: number[];
}

/**
 * The part of `@huggingface/tokenizers`' Tokenizer used here. Its published types import their
 * modules without file extensions, which NodeNext resolution cannot follow, so they are named here.
 */
interface HfTokenizer {
  encode(text: string, options: { add_special_tokens: boolean }): { ids: number[] };
  decode(ids: number[], options: { skip_special_tokens: boolean }): string;
  token_to_id(token: string): number | undefined;
  id_to_token(id: number): string | undefined;
}
const Tokenizer = (tokenizers as unknown as { Tokenizer: new (tokenizerJson: object, config: object) => HfTokenizer }).Tokenizer;

/** Stands in for an assistant answer when finding which tokens close one. */
const ANSWER_SENTINEL = 'METACLAW_ANSWER_SENTINEL';

/**
 * The base model's chat template (`@huggingface/jinja`) and tokenizer (`@huggingface/tokenizers`):
 * renders a chat to prompt ids, and decodes sampled ids back to text. Building one parses an
 * 11 MB vocabulary (1–2 s), so the proxy keeps one per tokenizer folder.
 */
export class ChatTokenizer {
  /** Token ids that end an assistant turn: the template's own closing token and the model's EOS ids. */
  readonly stopTokens: readonly number[];
  private readonly specialIds: ReadonlySet<number>;
  private readonly segments: SegmentEncoder;

  private constructor(
    private readonly tokenizer: HfTokenizer,
    private readonly template: Template,
    private readonly specialTokens: { bos: string; eos: string },
    files: TokenizerFiles,
  ) {
    this.specialIds = new Set(files.tokenizer.added_tokens.filter((token) => token.special).map((token) => token.id));
    this.segments = new SegmentEncoder(files.tokenizer, (text) => this.tokenizer.encode(text, { add_special_tokens: false }).ids);
    this.stopTokens = this.findStopTokens(files.generationEosIds);
  }

  static fromFiles(files: TokenizerFiles): ChatTokenizer {
    let template: Template;
    let tokenizer: HfTokenizer;
    try {
      template = new Template(files.chatTemplate);
    } catch (error) {
      throw new TokenizerUnavailableError(`The chat template in ${files.folder} does not parse: ${errorMessage(error)}`, { cause: error });
    }
    try {
      tokenizer = new Tokenizer(files.tokenizer, files.config);
    } catch (error) {
      throw new TokenizerUnavailableError(`The tokenizer in ${files.folder} cannot be built: ${errorMessage(error)}`, { cause: error });
    }
    const specialTokens = { bos: tokenText(files.config.bos_token) ?? '', eos: tokenText(files.config.eos_token) ?? '' };
    return new ChatTokenizer(tokenizer, template, specialTokens, files);
  }

  /** The prompt for the next assistant turn (`add_generation_prompt`), as text and ids. */
  renderPrompt(request: OpenAIChatRequest): RenderedPrompt {
    const input = templateInput(request);
    // The upstream answers an empty chat with a 400; a template would render a bare generation prompt.
    if (input.messages.length === 0) throw new Error('the request has no messages');
    const text = this.renderText(input.messages, input.tools, input.kwargs, true);
    return { text, tokens: this.encode(text) };
  }

  renderText(messages: TemplateMessage[], tools: unknown[] | undefined, kwargs: Record<string, unknown>, addGenerationPrompt: boolean): string {
    return this.template.render({
      ...kwargs,
      messages,
      tools,
      add_generation_prompt: addGenerationPrompt,
      bos_token: this.specialTokens.bos,
      eos_token: this.specialTokens.eos,
    });
  }

  /**
   * Ids for text as it stands: special tokens written in it are those tokens, nothing is added
   * around it. The text between added tokens is remembered (segment-cache.ts), so an agent's
   * repeated system prompt and history cost nothing after their first turn.
   */
  encode(text: string): number[] {
    return this.segments.encode(text);
  }

  /** Text for sampled ids; special tokens (`<|im_end|>`) are left out, the model's markup (`<tool_call>`, `<think>`) stays. */
  decode(tokens: readonly number[]): string {
    return this.tokenizer.decode([...tokens], { skip_special_tokens: true });
  }

  tokenId(token: string): number | undefined {
    return this.tokenizer.token_to_id(token);
  }

  /** Whether `id` is in the vocabulary (decoding silently drops ids that are not). */
  hasId(id: number): boolean {
    return this.tokenizer.id_to_token(id) !== undefined;
  }

  /**
   * The special token the template writes right after an assistant answer (`<|im_end|>` for
   * Qwen), the EOS token, and generation_config's EOS ids.
   */
  private findStopTokens(generationEosIds: number[]): number[] {
    const stops = new Set<number>();
    try {
      const messages = [
        { role: 'user', content: 'ping' },
        { role: 'assistant', content: ANSWER_SENTINEL },
      ];
      const rendered = this.renderText(messages, undefined, {}, false);
      const after = rendered.slice(rendered.lastIndexOf(ANSWER_SENTINEL) + ANSWER_SENTINEL.length);
      const closing = this.encode(after)[0];
      if (closing !== undefined && this.specialIds.has(closing)) stops.add(closing);
    } catch {
      // A template that cannot render this minimal chat still has its EOS token.
    }
    const eos = this.specialTokens.eos === '' ? undefined : this.tokenId(this.specialTokens.eos);
    if (eos !== undefined) stops.add(eos);
    for (const id of generationEosIds) stops.add(id);
    return [...stops];
  }
}
