import type { Context } from 'hono';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import { z } from 'zod';
import { promptTokens } from '../context/index.js';
import { NotFoundError } from '../errors.js';
import { passThrough, type PassedAnswer } from '../upstream/index.js';
import { readJsonObject } from './route-body.js';
import type { ProxyApp, ProxyDeps, ProxyEnv } from './types.js';
import { describeIssue, requestErrorFrom, validateTokenCountRequest } from './validate.js';

/** Token counting is quick; an embeddings batch may take a while. */
const COUNT_TIMEOUT_MS = 30_000;
const EMBEDDINGS_TIMEOUT_MS = 120_000;

const embeddingsRequest = z.looseObject({
  model: z.string({ error: (issue) => (issue.input === undefined ? 'required' : 'expected a string') }),
  input: z.union([z.string(), z.array(z.unknown()).min(1, 'must not be empty')], { error: 'expected a string or an array' }),
});

type RouteContext = Context<ProxyEnv>;

/**
 * Endpoints agents call beside the model routes, passed to the upstream as they came and not
 * recorded (a counter in /status): Anthropic's `count_tokens` (estimated when the main upstream is
 * not Anthropic) and OpenAI's `embeddings`.
 */
export function passThroughRoutes(deps: ProxyDeps, app: ProxyApp): void {
  const countTokens = async (c: RouteContext) => {
    const headers = c.env.incoming.headers;
    const credentials = deps.auth.check(headers, c.req.method);
    const body = await readJsonObject(c.req.raw);
    validateTokenCountRequest(body);
    deps.stats.tokenCounts++;
    const target = deps.forwarder.mainTarget;
    if (target.format !== 'anthropic') return c.json({ input_tokens: promptTokens(body) });
    const model = target.model;
    return relay(c, await passThrough(target, 'count_tokens', model === undefined ? body : { ...body, model }, headers, credentials, COUNT_TIMEOUT_MS));
  };

  const embeddings = async (c: RouteContext) => {
    const headers = c.env.incoming.headers;
    const credentials = deps.auth.check(headers, c.req.method);
    const body = await readJsonObject(c.req.raw);
    const checked = embeddingsRequest.safeParse(body);
    if (!checked.success) throw requestErrorFrom(checked.error, describeIssue);
    deps.stats.embeddingRequests++;
    // The chat model set for an upstream (model_id) is no embedding model: the client's model stays.
    const target = deps.forwarder.allTargets.find((candidate) => candidate.format === 'openai');
    if (!target)
      throw new NotFoundError('No OpenAI-compatible upstream is configured, so there is no embeddings endpoint to pass this to.', 'no_embeddings_upstream');
    return relay(c, await passThrough(target, 'embeddings', body, headers, credentials, EMBEDDINGS_TIMEOUT_MS));
  };

  for (const prefix of ['/v1', '']) {
    app.post(`${prefix}/messages/count_tokens`, countTokens);
    app.post(`${prefix}/embeddings`, embeddings);
  }
}

function relay(c: RouteContext, answer: PassedAnswer) {
  return c.body(new Uint8Array(answer.body), answer.status as ContentfulStatusCode, { 'content-type': answer.contentType });
}
