import type { FinishedTurn } from '../../src/conversation/index.js';
import type { PolicyTurn } from '../../src/rl/index.js';

/** A finished main turn as the proxy hands it to recording: one user message, a short answer. */
export function finishedTurn(id: string, sessionId: string, query: string, policy?: PolicyTurn): FinishedTurn {
  const body = { model: 'qwen3', messages: [{ role: 'user', content: query }] };
  return {
    id,
    sessionId,
    identitySource: 'header',
    lineage: 'test',
    scope: 'default',
    turnType: 'main',
    clientProfile: 'generic',
    sideRequest: null,
    clientFormat: 'openai',
    upstreamName: 'policy',
    upstreamFormat: 'openai',
    model: 'qwen3',
    stream: false,
    query,
    response: { text: 'Hello', reasoning: '', toolCalls: [], finishReason: 'stop', usage: null, model: 'qwen3' },
    status: 200,
    outcome: 'ok',
    error: null,
    attempts: 1,
    startedAt: Date.now(),
    firstByteMs: 5,
    durationMs: 10,
    payload: { received: { object: body }, injected: null, forwarded: { object: body }, receivedHeaders: {}, strippedKeys: [] },
    startsNewConversation: false,
    endsSession: false,
    learning: true,
    ...(policy ? { policy } : {}),
  };
}
