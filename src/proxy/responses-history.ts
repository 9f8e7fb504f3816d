import { z } from 'zod';
import type { TurnRow } from '../conversation/index.js';
import type { ResponsesOutputItem } from '../types/index.js';
import type { ConversationPort } from './types.js';
import { assistantToResponsesOutput, responsesInputItems } from '../upstream/index.js';

/** What a response id stands for: the whole conversation up to and including that answer. */
export interface RecordedConversation {
  /** Input and output items, oldest first, as a Responses request's `input` would list them. */
  items: readonly unknown[];
  /** The answer came from an upstream that serves the Responses API and keeps its responses: it can resolve the id itself. */
  upstreamKeeps: boolean;
  /** The memory scope of the turn that gave the answer: a team member may only continue their own. */
  scope: string | null;
}

/** Conversations kept in memory, newest last: an agent's next request names the response just given. */
const REMEMBERED = 256;
/** And at most about this many bytes of the requests that brought them (a request that resends its whole conversation holds its own copy). */
const REMEMBERED_BYTES = 32 * 1024 * 1024;

/**
 * `previous_response_id` resolved from the proxy's own records, for upstreams that keep no
 * responses (chat servers, Anthropic). The conversations of the latest responses are kept in
 * memory, since the next request usually comes before the record is written; an older one is
 * rebuilt from the turn records by following each turn's own `previous_response_id`.
 */
export class ResponsesHistory {
  private readonly recent = new Map<string, { conversation: RecordedConversation; bytes: number }>();
  private bytes = 0;

  constructor(
    private readonly conversation: Pick<ConversationPort, 'turnOfResponse' | 'getSession' | 'receivedBody'>,
    /** Turn records still being written, by request id. */
    private readonly pending: ReadonlyMap<string, Promise<void>>,
  ) {}

  /** `bytes`: about what the conversation holds that no other remembered one shares (the request's own body). */
  remember(responseId: string, conversation: RecordedConversation, bytes: number): void {
    this.forget(responseId);
    this.recent.set(responseId, { conversation, bytes });
    this.bytes += bytes;
    while (this.recent.size > REMEMBERED || this.bytes > REMEMBERED_BYTES) this.forget(this.recent.keys().next().value!);
  }

  private forget(responseId: string): void {
    const entry = this.recent.get(responseId);
    if (entry === undefined) return;
    this.recent.delete(responseId);
    this.bytes -= entry.bytes;
  }

  /**
   * The conversation a response id stands for; undefined when MetaClaw has no record of it (or of a
   * turn before it). With `ownScope` (a team member's), a conversation any of whose turns was in
   * another scope is as unknown as one never recorded.
   */
  async resolve(responseId: string, ownScope?: string): Promise<RecordedConversation | undefined> {
    const found = await this.resolveAny(responseId);
    return found && (ownScope === undefined || found.scope === ownScope) ? found : undefined;
  }

  private async resolveAny(responseId: string): Promise<RecordedConversation | undefined> {
    const remembered = this.recent.get(responseId);
    if (remembered) return remembered.conversation;
    let found = await this.fromRecords(responseId);
    if (found === undefined && this.pending.size > 0) {
      await Promise.allSettled([...this.pending.values()]);
      found = await this.fromRecords(responseId);
    }
    if (found) this.remember(responseId, found, JSON.stringify(found.items).length);
    return found;
  }

  /** The turn that gave this response, once its record is written; with `ownScope`, only a turn of that scope. */
  async turnOf(responseId: string, ownScope?: string): Promise<TurnRow | undefined> {
    let turn = await this.conversation.turnOfResponse(responseId);
    if (turn === undefined && this.pending.size > 0) {
      await Promise.allSettled([...this.pending.values()]);
      turn = await this.conversation.turnOfResponse(responseId);
    }
    return turn && (ownScope === undefined || (await this.scopeOf(turn)) === ownScope) ? turn : undefined;
  }

  private async scopeOf(turn: TurnRow): Promise<string | null> {
    return (await this.conversation.getSession(turn.session_id))?.scope ?? null;
  }

  /** Every turn of the chain must share one scope, or the conversation is not one member's own. */
  private async fromRecords(responseId: string): Promise<RecordedConversation | undefined> {
    const segments: Array<readonly unknown[]> = [];
    const seen = new Set<string>();
    let upstreamKeeps: boolean | undefined;
    let scope: string | null | undefined;
    const sameScope = (next: string | null): boolean => (scope === undefined ? ((scope = next), true) : scope === next);
    for (let id: string | undefined = responseId; id !== undefined;) {
      const remembered = this.recent.get(id)?.conversation;
      if (remembered) {
        if (!sameScope(remembered.scope)) return undefined;
        segments.unshift(remembered.items);
        upstreamKeeps ??= remembered.upstreamKeeps;
        break;
      }
      const turn = seen.has(id) ? undefined : await this.conversation.turnOfResponse(id);
      if (turn === undefined || !sameScope(await this.scopeOf(turn))) return undefined;
      seen.add(id);
      upstreamKeeps ??= turn.upstream_format === 'responses';
      const received = (await this.conversation.receivedBody(turn.id)) as Record<string, unknown> | null;
      // Its body is past store.payload_retention_days: the conversation cannot be rebuilt whole.
      if (received === null) return undefined;
      segments.unshift([...responsesInputItems(received['input']), ...recordedOutput(turn)]);
      const previous = received['previous_response_id'];
      id = typeof previous === 'string' ? previous : undefined;
    }
    return { items: segments.flat(), upstreamKeeps: upstreamKeeps ?? false, scope: scope ?? null };
  }
}

const recordedCalls = z.array(z.object({ id: z.string(), name: z.string(), arguments: z.string() }));

/** A recorded turn's answer as Responses output items: its text and function calls (reasoning is not recorded). */
export function recordedOutput(turn: TurnRow): ResponsesOutputItem[] {
  let calls: unknown = [];
  try {
    calls = turn.tool_calls ? JSON.parse(turn.tool_calls) : [];
  } catch {
    // a record that does not parse has no calls to show
  }
  const toolCalls = recordedCalls.safeParse(calls).data ?? [];
  return assistantToResponsesOutput({ text: turn.response_text ?? '', reasoning: '', toolCalls }, turn.response_id ?? turn.id);
}
