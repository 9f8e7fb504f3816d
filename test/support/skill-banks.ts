import { cpSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before } from 'node:test';
import OpenAI from 'openai';
import { STARTER_DIR } from '../../src/skills/index.js';
import { recordedTurn, startProxy, tempHome, type ProxyHandle } from './proxy.js';
import { ScriptedUpstream } from './upstream.js';

/**
 * The starter bank with only the English entries of each `Keywords:` line: an English skill bank
 * (the starter skills carry Chinese and Japanese keywords, which would answer a cross-lingual
 * request by themselves). Written to `target`, which is returned.
 */
export function englishOnlyStarter(target: string): string {
  cpSync(STARTER_DIR, target, { recursive: true });
  for (const name of readdirSync(target)) {
    const file = join(target, name, 'SKILL.md');
    const text = readFileSync(file, 'utf8').replace(/^Keywords: (.*)$/m, (_line, list: string) => {
      const english = list.split(',').filter((keyword) => !/[\u3040-\u30ff\u3400-\u9fff]/.test(keyword));
      return `Keywords: ${english.join(',').trim()}`;
    });
    writeFileSync(file, text);
  }
  return target;
}

/**
 * For the tests of the enclosing `describe`: a real proxy whose skills folder is a copy of `bank`
 * (started before them, stopped after). Returns what an OpenAI client's request got: the skills the
 * turn record says were injected, each request asked in its own session.
 */
export function skillBankProxy(bank: string): (question: string, session: string) => Promise<string[]> {
  let upstream: ScriptedUpstream | undefined;
  let proxy: ProxyHandle | undefined;
  let client: OpenAI;
  before(async () => {
    upstream = await ScriptedUpstream.start();
    const home = tempHome();
    cpSync(bank, join(home, 'skills'), { recursive: true });
    proxy = await startProxy({
      home,
      config: { llm: { api_base: `${upstream.url}/v1`, api_key: 'k' }, skills: { auto_evolve: false }, memory: { auto_extract: false } },
    });
    client = new OpenAI({ baseURL: `${proxy.url}/v1`, apiKey: 'x', maxRetries: 0 });
  });
  after(async () => {
    await proxy?.dispose();
    await upstream?.close();
  });
  return async (question, session) => {
    const { response } = await client.chat.completions
      .create({ model: 'm', messages: [{ role: 'user', content: question }] }, { headers: { 'X-Session-Id': session } })
      .withResponse();
    const turn = await recordedTurn(proxy!.url, response.headers.get('x-metaclaw-request-id')!);
    const section = (turn.added?.sections ?? []).find((item: { provider: string }) => item.provider === 'skills');
    return (section?.details.skills ?? []).map((skill: { name: string }) => skill.name);
  };
}
