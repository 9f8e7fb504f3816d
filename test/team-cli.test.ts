/**
 * `metaclaw sessions`, `skills`, `rl export` and `scheduler` on a node of a team: with store.url
 * (here METACLAW_DATABASE_URL) set, they work on the team store the nodes serve from, or refuse in
 * one line, never on the install's own database and skills folder, which no node reads.
 */
import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import OpenAI from 'openai';
import { postgresSkip } from './support/postgres.js';
import { startProxy, waitFor, type ProxyHandle } from './support/proxy.js';
import { teamForTests, teamHelpers } from './support/team.js';

const OWNER_KEY = 'owner-key-for-the-team-cli-test';

const team = teamForTests('team_cli');
const { cli, teamEnv } = teamHelpers(() => team, OWNER_KEY, {});
let node: ProxyHandle;

const json = async <T>(args: string[]): Promise<T> => JSON.parse(await cli([...args, '--json'])) as T;
describe('the CLI on a node of a team store', { skip: postgresSkip() }, () => {
  before(async () => {
    await cli(['store', 'migrate']);
    node = await startProxy({ env: teamEnv(), config: { llm: { api_base: `${team.upstream.url}/v1`, api_key: 'upstream-key' } } });
    team.nodes.push(node);
  });

  test('sessions list and show read the sessions the nodes recorded in the team store', async () => {
    const client = new OpenAI({ baseURL: `${node.url}/v1`, apiKey: OWNER_KEY, maxRetries: 0 });
    await client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'Where do the release notes for 4.2 live?' }] });
    const [session] = await waitFor(async () => {
      const sessions = await json<Array<{ id: string; turn_count: number }>>(['sessions', 'list']);
      return sessions.length > 0 && sessions[0]!.turn_count > 0 && sessions;
    }, 8_000);
    const shown = await json<{ turns: Array<{ query: string | null }> }>(['sessions', 'show', session!.id]);
    assert.ok(
      shown.turns.some((turn) => turn.query?.includes('release notes for 4.2')),
      JSON.stringify(shown.turns),
    );
    assert.match(await cli(['sessions', 'show', session!.id]), /user: Where do the release notes for 4\.2 live\?/);
  });
});
