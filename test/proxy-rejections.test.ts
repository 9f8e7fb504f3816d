import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import { logLineWith } from './support/log.js';
import { startProxy, type ProxyHandle } from './support/proxy.js';
import { ScriptedUpstream } from './support/upstream.js';

interface LastError {
  request_id: string;
  status: number | null;
  error: string;
}

describe('what the proxy refuses itself can be traced: logged at warn with the request id, listed in /status, counted', () => {
  let upstream: ScriptedUpstream;
  let proxy: ProxyHandle;

  before(async () => {
    upstream = await ScriptedUpstream.start();
    proxy = await startProxy({ config: { llm: { api_base: upstream.url, api_format: 'anthropic', api_key: 'k' } } });
  });
  after(async () => {
    await proxy?.dispose();
    await upstream?.close();
  });

  const requests = async () =>
    ((await (await fetch(`${proxy.url}/status`)).json()) as { requests: { errors: Record<string, number>; last_errors: LastError[] } }).requests;
  test('a 400 the proxy returns (a Messages request without max_tokens) is in /status last_errors and in the log at warn, with its request id', async () => {
    const client = new Anthropic({ baseURL: proxy.url, apiKey: 'x', maxRetries: 0 });
    const refused = await client.messages
      .create({ model: 'm', messages: [{ role: 'user', content: 'hi' }] } as unknown as Anthropic.MessageCreateParamsNonStreaming)
      .then(
        () => assert.fail('expected a 400'),
        (caught: unknown) => caught,
      );
    assert.ok(refused instanceof Anthropic.BadRequestError);
    const requestId = refused.headers.get('x-metaclaw-request-id')!;
    assert.match(requestId, /^req_/);

    const listed = (await requests()).last_errors.find((error) => error.request_id === requestId);
    assert.equal(listed?.status, 400);
    assert.match(listed.error, /max_tokens: required/);
    const line = await logLineWith(proxy.home, requestId);
    assert.equal(line['level'], 'warn');
    assert.equal(line['status'], 400);
    assert.match(String(line['error']), /max_tokens: required/);
    assert.equal(upstream.modelRequests().length, 0);
  });

  test("a 404 (Claude Code's HEAD /, an unknown path) is counted in /status and listed with its request id", async () => {
    const before = (await requests()).errors['not_found'] ?? 0;
    const head = await fetch(`${proxy.url}/`, { method: 'HEAD' });
    const unknown = await fetch(`${proxy.url}/v1/nothing-here`);
    assert.equal(head.status, 404);
    assert.equal(unknown.status, 404);
    const current = await requests();
    assert.equal(current.errors['not_found'], before + 2);
    const unknownId = unknown.headers.get('x-metaclaw-request-id')!;
    const listed = current.last_errors.find((error) => error.request_id === unknownId);
    assert.equal(listed?.status, 404);
    assert.match(listed.error, /GET \/v1\/nothing-here/);
    assert.equal((await logLineWith(proxy.home, unknownId))['level'], 'warn');
  });
});
