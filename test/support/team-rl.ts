import { join } from 'node:path';
import type OpenAI from 'openai';
import { learningAwareUpstream } from './evolver.js';
import type { ProxyHandle } from './proxy.js';
import { RL_MODEL, writeCharTokenizer } from './rl-proxy.js';
import type { teamHelpers } from './team.js';
import type { TinkerDouble } from './tinker-double.js';
import type { ScriptedUpstream } from './upstream.js';

/**
 * The config of a node in mode rl (batch of four) on the Tinker double, with the character tokenizer
 * in the seed home, `rl` keys added to the rl section and `config` to the top level (opd.*, say).
 */
export function rlTeamConfig(options: {
  seed: string;
  upstream: ScriptedUpstream;
  double: TinkerDouble;
  config?: Record<string, unknown>;
  rl?: Record<string, unknown>;
}): Record<string, unknown> {
  const { seed, upstream, double } = options;
  const tokenizer = join(seed, 'char-tokenizer');
  writeCharTokenizer(tokenizer);
  return {
    mode: 'rl',
    llm: { api_base: `${upstream.url}/v1`, api_key: 'upstream-key', model_id: RL_MODEL },
    rl: { backend: 'tinker', api_key: double.apiKey, base_url: double.url, tokenizer_path: tokenizer, batch_size: 4, prm_m: 1, ...options.rl },
    skills: { enabled: false, auto_evolve: false },
    memory: { enabled: false },
    learning: { lease_seconds: 5 },
    ...options.config,
  };
}

/**
 * A team store set up for RL training: migrated, with members alice and bob, and two nodes with
 * `rlTeamConfig`, started by the test's `startTeam` (teamHelpers: one add-member loop for every team
 * test). The scripted upstream answers what the policy does not, and judges with votes that
 * alternate, so a batch of four holds two rewards of each sign (something to learn).
 */
export async function startRlTeam(options: {
  seed: string;
  startTeam: ReturnType<typeof teamHelpers>['startTeam'];
  upstream: ScriptedUpstream;
  double: TinkerDouble;
  config?: Record<string, unknown>;
  rl?: Record<string, unknown>;
}): Promise<ProxyHandle[]> {
  let judged = 0;
  options.upstream.defaultHandler = learningAwareUpstream({ chat: 'From the normal upstream.', judge: () => `Score: ${++judged % 2 === 1 ? 1 : -1}` });
  return options.startTeam(['alice', 'bob'], 2, rlTeamConfig(options));
}

/** A member's conversation: one main turn per text, the last one ending the session (so every turn is judged). */
export async function conversation(openai: OpenAI, session: string, texts: string[]): Promise<void> {
  for (const [index, content] of texts.entries())
    await openai.chat.completions.create(
      { model: RL_MODEL, messages: [{ role: 'user', content }], max_tokens: 6 },
      { headers: { 'x-session-id': session, ...(index === texts.length - 1 ? { 'x-session-done': 'true' } : {}) } },
    );
}
