import { responsesConversation, type ConversationMessage } from '../conversation/index.js';
import { BadRequestError } from '../errors.js';
import type { AssembledResponse } from '../types/index.js';
import { assistantToResponsesOutput, responseIdFor, responsesInputItems, wireFormat, type ForwardResult, type UpstreamForwarder } from '../upstream/index.js';
import type { RecordedConversation, ResponsesHistory } from './responses-history.js';

/**
 * What a Responses API request needs beyond the common path. Before: its `previous_response_id`
 * resolved, so its conversation is known (for session identity, the user's request, and upstreams
 * that cannot resolve the id). After: the answer's response id for the record, and its
 * conversation remembered for the request that will name it.
 */
export class ResponsesTurn {
  private constructor(
    private readonly history: ResponsesHistory,
    /** The whole conversation as chat messages. */
    readonly messages: ConversationMessage[],
    /** The conversation before this request, when it names a previous response MetaClaw knows. */
    readonly earlier: RecordedConversation | undefined,
    /** Whether what came before this request is known (nothing, or a known previous response). */
    private readonly known: boolean,
    private readonly input: readonly unknown[],
    /** The request's size; with `store: false` nothing is remembered (no later request may name the answer). */
    private readonly remembered: { bytes: number; store: boolean },
  ) {}

  /**
   * Resolves `previous_response_id`. The request goes on as sent; the forwarder sends the earlier
   * conversation along where the upstream cannot resolve the id itself (see translate/format-pairs.ts).
   */
  static async prepare(
    history: ResponsesHistory,
    forwarder: UpstreamForwarder,
    body: Record<string, unknown>,
    bytes: number,
    /** A team member's scope: only their own earlier responses can be continued. */
    ownScope?: string,
  ): Promise<ResponsesTurn> {
    const input = responsesInputItems(body['input']);
    const remembered = { bytes, store: body['store'] !== false };
    const previousId = body['previous_response_id'];
    if (typeof previousId !== 'string') return new ResponsesTurn(history, responsesConversation(input), undefined, true, input, remembered);
    const previous = await history.resolve(previousId, ownScope);
    if (previous !== undefined) return new ResponsesTurn(history, responsesConversation([...previous.items, ...input]), previous, true, input, remembered);
    // A member's id is never handed to the upstream unresolved: the team's upstream key would
    // open any member's stored responses there.
    if (ownScope !== undefined)
      throw new BadRequestError(
        'previous_response_not_found',
        `Previous response with id '${previousId}' not found among your own responses.`,
        'previous_response_id',
      );
    if (!forwarder.allTargets.some((target) => target.responses))
      throw new BadRequestError(
        'previous_response_not_found',
        `Previous response with id '${previousId}' not found: MetaClaw has no record of it, and no upstream keeps responses of its own.`,
        'previous_response_id',
      );
    // An upstream that keeps responses may know it; what came before stays unknown here.
    return new ResponsesTurn(history, responsesConversation(input), undefined, false, input, remembered);
  }

  /** The answer with the response id the client got; its conversation is remembered when it went well. */
  answered(requestId: string, result: ForwardResult, scope: string): AssembledResponse | null {
    const response = result.response;
    if (response === null) return null;
    const id = response.id ?? responseIdFor(requestId);
    if (result.outcome === 'ok' && this.known && this.remembered.store) {
      // Reasoning is not sent back: without the upstream's own encrypted form it means nothing there.
      const output = assistantToResponsesOutput({ ...response, reasoning: '' }, id);
      const upstreamKeeps = result.upstream !== null && wireFormat(result.upstream, 'responses') === 'responses';
      this.history.remember(id, { items: [...(this.earlier?.items ?? []), ...this.input, ...output], upstreamKeeps, scope }, this.remembered.bytes);
    }
    return { ...response, id };
  }
}
