import { readFileSync } from 'node:fs';
import type Anthropic from '@anthropic-ai/sdk';
import type OpenAI from 'openai';

/** A request as an agent CLI sends it (test/fixtures/clients/*.json): the headers that matter and the body. */
export interface ClientFixture {
  headers: Record<string, string>;
  body: any;
}

export function clientFixture(name: string): ClientFixture {
  return JSON.parse(readFileSync(new URL(`../fixtures/clients/${name}.json`, import.meta.url), 'utf8')) as ClientFixture;
}

/** Sends a fixture with the real Anthropic SDK (draining a stream) and returns the proxy's request id. */
export async function sendAnthropic(client: Anthropic, request: ClientFixture): Promise<string> {
  const { data, response } = await client.messages.create(request.body, { headers: request.headers }).withResponse();
  if (request.body.stream) for await (const _event of data as unknown as AsyncIterable<unknown>);
  return response.headers.get('x-metaclaw-request-id')!;
}

/** Sends a fixture with the real OpenAI SDK (draining a stream) and returns the proxy's request id. */
export async function sendOpenAI(client: OpenAI, request: ClientFixture): Promise<string> {
  const { data, response } = await client.chat.completions.create(request.body, { headers: request.headers }).withResponse();
  if (request.body.stream) for await (const _chunk of data as unknown as AsyncIterable<unknown>);
  return response.headers.get('x-metaclaw-request-id')!;
}
