import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import OpenAI from 'openai';
import { completionWith, DEPLOY_SKILL, isEvolverCall, learningAwareUpstream, session, status } from './support/evolver.js';
import { startProxy, waitFor, type ProxyHandle } from './support/proxy.js';
import { anthropicReply, errorReply, ScriptedUpstream, type Handler } from './support/upstream.js';

/** Answers the agent, and the evolver with `evolver`. */
function upstreamWith(evolver: Handler): Handler {
  const chat = learningAwareUpstream({ chat: 'Run kubectl apply on the billing manifests.' });
  return (request, response) => (isEvolverCall(request) ? evolver(request, response) : chat(request, response));
}

const refusal = errorReply(400, { error: { message: 'the request was not in structured form', type: 'invalid_request_error' } });

interface Scene {
  proxy: ProxyHandle;
  upstream: ScriptedUpstream;
  /** Runs a session that corrects a deploy, ending it; resolves once `jobs` learning jobs have settled (done or given up). */
  correctedSession: (id: string, jobs: number) => Promise<{ done: number; dead: number }>;
  /** What each evolver call asked for: `json_schema`, `tool` or `text`. */
  askedFor: () => string[];
  skillFile: string;
}

/** A started proxy in front of a scripted upstream (`format`) whose evolver calls `evolver` answers; memory off, evolution at session end. */
async function scene(format: 'openai' | 'anthropic', evolver: Handler, run: (scene: Scene) => Promise<void>): Promise<void> {
  const upstream = await ScriptedUpstream.start();
  upstream.defaultHandler = upstreamWith(evolver);
  const llm = format === 'anthropic' ? { api_base: upstream.url, api_format: 'anthropic', api_key: 'k' } : { api_base: `${upstream.url}/v1`, api_key: 'k' };
  const proxy = await startProxy({ config: { memory: { enabled: false }, llm, skills: { evolution_every_n_turns: 0 } } });
  const client = new OpenAI({ baseURL: `${proxy.url}/v1`, apiKey: 'x', maxRetries: 0 });
  try {
    await run({
      proxy,
      upstream,
      correctedSession: async (id, jobs) => {
        await session(client, id, [`How do I deploy the billing service? (${id})`, 'No, use the blue-green script, never on Fridays.']);
        return waitFor(
          async () => {
            const { queue } = await status(proxy);
            return queue.done + queue.dead >= jobs ? { done: queue.done as number, dead: queue.dead as number } : undefined;
          },
          20_000,
          100,
        );
      },
      askedFor: () =>
        upstream
          .modelRequests()
          .filter(isEvolverCall)
          .map((request) => (request.body.response_format?.type ?? (request.body.tool_choice ? 'tool' : 'text')) as string),
      skillFile: join(proxy.home, 'skills', DEPLOY_SKILL.name, 'SKILL.md'),
    });
  } finally {
    await proxy.dispose();
    await upstream.close();
  }
}

const fenced = (text: string) => `${text}\n\`\`\`json\n${JSON.stringify({ changes: [DEPLOY_SKILL] })}\n\`\`\``;

describe('learning calls ask for structured output', () => {
  test('an OpenAI upstream is asked for a strict json_schema answer, and the skill is written from it (optional fields sent back as null)', async () => {
    const strictAnswer: Handler = (request, response) => {
      const format = request.body.response_format;
      const change = format?.json_schema?.schema?.properties?.changes?.items;
      const strict =
        format?.type === 'json_schema' &&
        format.json_schema.name === 'skill_changes' &&
        format.json_schema.strict === true &&
        change?.additionalProperties === false &&
        Object.keys(change.properties).every((name) => change.required.includes(name));
      if (!strict) return refusal(request, response);
      // Strict mode makes every field required: the model sends the optional ones as null.
      return completionWith(JSON.stringify({ changes: [{ ...DEPLOY_SKILL, category: null, reason: null }] }), response);
    };
    await scene('openai', strictAnswer, async ({ correctedSession, askedFor, skillFile }) => {
      assert.deepEqual(await correctedSession('structured-session', 1), { done: 1, dead: 0 }, 'the evolution job succeeded');
      assert.match(readFileSync(skillFile, 'utf8'), /Never deploy on Fridays/);
      assert.deepEqual(askedFor(), ['json_schema'], 'one call, answered in structured form');
    });
  });

  test('an Anthropic upstream is asked for a forced tool call, and the skill is written from the tool input', async () => {
    const toolAnswer: Handler = (request, response) => {
      const tool = Array.isArray(request.body.tools) ? request.body.tools[0] : undefined;
      const forced =
        tool?.name === 'skill_changes' &&
        tool.input_schema?.properties?.changes?.type === 'array' &&
        request.body.tool_choice?.type === 'tool' &&
        request.body.tool_choice.name === 'skill_changes';
      if (!forced) return refusal(request, response);
      const call = { id: 'toolu_1', name: 'skill_changes', arguments: JSON.stringify({ changes: [DEPLOY_SKILL] }) };
      return anthropicReply({ toolCalls: [call] })(request, response);
    };
    await scene('anthropic', toolAnswer, async ({ correctedSession, askedFor, skillFile, upstream }) => {
      assert.deepEqual(await correctedSession('tool-session', 1), { done: 1, dead: 0 }, 'the evolution job succeeded');
      assert.match(readFileSync(skillFile, 'utf8'), /Never deploy on Fridays/);
      assert.deepEqual(askedFor(), ['tool']);
      assert.equal(upstream.modelRequests().filter(isEvolverCall)[0]!.path, '/v1/messages');
    });
  });

  test('an upstream that refuses response_format (400) gets the call again in text, and later learning calls go straight to text, said once in the log', async () => {
    const unsupported = errorReply(400, {
      error: { message: 'Unrecognized request argument: response_format is not supported', type: 'invalid_request_error', param: 'response_format' },
    });
    const textOnly: Handler = (request, response) =>
      request.body.response_format ? unsupported(request, response) : completionWith(fenced('Here is what I learned:'), response);
    await scene('openai', textOnly, async ({ proxy, correctedSession, askedFor, skillFile }) => {
      assert.deepEqual(await correctedSession('first-session', 1), { done: 1, dead: 0 }, 'the evolution job succeeded in text');
      assert.ok(existsSync(skillFile), 'the skill was written from the text answer');
      assert.deepEqual(askedFor(), ['json_schema', 'text'], 'asked in structured form, refused, asked again in text');

      assert.deepEqual(await correctedSession('second-session', 2), { done: 2, dead: 0 });
      assert.deepEqual(askedFor(), ['json_schema', 'text', 'text'], 'the next learning call went straight to text');
      await proxy.stop();
      const log = readFileSync(join(proxy.home, 'logs', 'metaclaw.log'), 'utf8');
      assert.equal(log.split('\n').filter((line) => line.includes('does not take structured output')).length, 1, 'said once');
    });
  });

  test('an upstream that ignores response_format and answers in prose is read as text, and asked in text from then on', async () => {
    await scene(
      'openai',
      (_request, response) => completionWith(fenced('Sure! Here are the changes:'), response),
      async ({ correctedSession, askedFor, skillFile }) => {
        assert.deepEqual(await correctedSession('prose-session', 1), { done: 1, dead: 0 });
        assert.ok(existsSync(skillFile), 'the skill was written from the JSON in the prose');
        assert.deepEqual(await correctedSession('later-session', 2), { done: 2, dead: 0 });
        assert.deepEqual(askedFor(), ['json_schema', 'text']);
      },
    );
  });
});
