import type { UpstreamTarget, WireFormat } from '../config/index.js';
import { endpointPath, jsonHeaders } from './endpoint.js';
import { simpleRequest as send } from './http.js';
import { parseEntries } from './models.js';
import { withoutKeys } from '../shared/without-keys.js';

export interface ProbeResult {
  ok: boolean;
  /** One plain sentence: what worked, or exactly what failed. */
  detail: string;
  /** Model ids the upstream listed, when it lists them. */
  models: string[] | undefined;
}

/**
 * Checks a base URL and key with real requests: the model list first (cheap, no tokens), and when
 * the upstream has none, a one-token completion. Used by `metaclaw setup` and `metaclaw doctor`.
 */
export async function probeUpstream(
  target: { baseUrl: string; format: WireFormat; apiKey: string | undefined; model: string | undefined },
  timeoutMs = 15_000,
): Promise<ProbeResult> {
  const base = target.baseUrl.replace(/\/+$/, '');
  const upstream: UpstreamTarget = {
    name: 'probe',
    baseUrl: base,
    format: target.format,
    responses: false,
    apiKey: target.apiKey,
    keySource: target.apiKey ? 'config' : 'client',
    model: target.model,
  };
  const headers = jsonHeaders(upstream, {});
  const modelsUrl = endpointPath(upstream, 'models');
  let listed: { status: number; text: string };
  try {
    listed = await send(modelsUrl, 'GET', headers, undefined, timeoutMs);
  } catch (error) {
    return { ok: false, detail: `cannot reach ${modelsUrl}: ${(error as Error).message}`, models: undefined };
  }
  if (listed.status === 401 || listed.status === 403)
    return {
      ok: false,
      detail: `the upstream rejected the key (HTTP ${listed.status} from ${modelsUrl}): ${errorText(listed.text, target.apiKey)}`,
      models: undefined,
    };
  if (listed.status >= 200 && listed.status < 300) {
    const models = parseEntries(target.format, listed.text)?.map((entry) => entry.id);
    if (target.model && models && models.length > 0 && !models.includes(target.model)) {
      return {
        ok: true,
        detail: `reached ${base} (${keyWorks(target.apiKey)}), but it does not list the model "${target.model}" (it lists ${models.slice(0, 8).join(', ')}${models.length > 8 ? ', …' : ''})`,
        models,
      };
    }
    return { ok: true, detail: `reached ${base}; ${keyWorks(target.apiKey)}${models ? ` (${listedCount(models.length)})` : ''}`, models };
  }
  if (!target.model)
    return { ok: false, detail: `${modelsUrl} answered HTTP ${listed.status} and no model is set to try a completion with`, models: undefined };
  // No model list here (many compatible servers lack one): a one-token completion proves the key.
  const completionUrl = endpointPath(upstream, 'model');
  const body = { model: target.model, max_tokens: 1, messages: [{ role: 'user', content: 'ping' }] };
  try {
    const completion = await send(completionUrl, 'POST', headers, JSON.stringify(body), timeoutMs);
    if (completion.status >= 200 && completion.status < 300)
      return { ok: true, detail: `reached ${base}; a one-token completion with ${target.model} worked`, models: undefined };
    if (completion.status === 401 || completion.status === 403)
      return {
        ok: false,
        detail: `the upstream rejected the key (HTTP ${completion.status} from ${completionUrl}): ${errorText(completion.text, target.apiKey)}`,
        models: undefined,
      };
    return {
      ok: false,
      detail: `a one-token completion with ${target.model} failed: HTTP ${completion.status} from ${completionUrl}: ${errorText(completion.text, target.apiKey)}`,
      models: undefined,
    };
  } catch (error) {
    return { ok: false, detail: `cannot reach ${completionUrl}: ${(error as Error).message}`, models: undefined };
  }
}

/** Without a key the check proves only that the upstream answers: the agent's own key goes up later. */
function keyWorks(apiKey: string | undefined): string {
  return apiKey ? 'the key works' : 'it answers without a key';
}

function listedCount(count: number): string {
  return `${count} model${count === 1 ? '' : 's'} listed`;
}

/**
 * The upstream's own words for an error, without their final full stop: setup and doctor end the
 * sentence they put it in themselves ("Incorrect API key provided.." otherwise). The key checked is
 * taken out, as the proxy takes it out of upstream errors: some servers echo it ("Incorrect API key
 * provided: sk-…"), and setup's and doctor's output ends up in terminals' scrollback and CI logs.
 */
function errorText(text: string, apiKey: string | undefined): string {
  return withoutKeys(upstreamWords(text), [apiKey]).replace(/[.\s]+$/, '') || '(empty body)';
}

function upstreamWords(text: string): string {
  try {
    const parsed = JSON.parse(text) as { error?: { message?: string } | string; message?: string };
    if (typeof parsed.error === 'string') return parsed.error;
    return parsed.error?.message ?? parsed.message ?? text.slice(0, 200);
  } catch {
    return text.slice(0, 200);
  }
}
