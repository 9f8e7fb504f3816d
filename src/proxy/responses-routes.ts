import type { Context } from 'hono';
import type { TurnRow } from '../conversation/index.js';
import { NotFoundError } from '../errors.js';
import type { ResponsesObject } from '../types/index.js';
import { openAIUsageToResponses, responseObject, responsesStatus } from '../upstream/index.js';
import { memberScope } from '../team/index.js';
import { recordedOutput } from './responses-history.js';
import type { ProxyApp, ProxyDeps, ProxyEnv } from './types.js';

/** `GET /v1/responses/{id}`: a Responses API answer as the turn records hold it. */
export function responsesRoutes(deps: ProxyDeps, app: ProxyApp): void {
  const retrieve = async (c: Context<ProxyEnv>) => {
    const id = c.req.param('id') ?? '';
    const member = c.get('member');
    const turn = await deps.responses.turnOf(id, member ? memberScope(member) : undefined);
    if (!turn) throw new NotFoundError(`No response with id '${id}' has been recorded by this proxy.`, 'response_not_found');
    const received = await deps.conversation.receivedBody(turn.id);
    return c.json(recordedResponse(turn, typeof received === 'object' && received !== null ? (received as Record<string, unknown>) : {}));
  };
  app.get('/v1/responses/:id', retrieve);
  app.get('/responses/:id', retrieve);
}

/**
 * The response rebuilt from its turn: the request's own fields, and the answer's text, function
 * calls and usage (reasoning is not recorded). An answer that failed is `failed`, with the error.
 */
function recordedResponse(turn: TurnRow, request: Record<string, unknown>): ResponsesObject {
  const ok = turn.outcome === 'ok';
  const usage = turn.input_tokens === null && turn.output_tokens === null;
  return responseObject(
    { responseId: turn.response_id ?? turn.id, request, createdAt: Math.floor(turn.started_at / 1000) },
    {
      ...(ok ? responsesStatus(turn.finish_reason) : { status: 'failed', incomplete_details: null }),
      error: ok ? null : { code: 'server_error', message: turn.error ?? turn.outcome },
      model: turn.model ?? '',
      output: recordedOutput(turn),
      usage: usage ? null : openAIUsageToResponses({ prompt_tokens: turn.input_tokens ?? 0, completion_tokens: turn.output_tokens ?? 0 }),
    },
  );
}
