/**
 * End to end with the real coding-agent CLIs (pinned, from npm): Claude Code, Codex, Qwen Code and
 * opencode, each run headless as a user runs it, wired to a running MetaClaw proxy with
 * `metaclaw claw wire`, in front of the scripted upstream. Per client: a run with one tool call round
 * trip (a shell `echo` the CLI really runs), then "say hello" twice. What it proves for each: the
 * reply arrives; one run is one session and separate runs are separate sessions; the client's own
 * side requests are side turns; nothing of its wrapper text reaches the retrieval query or the
 * standing instructions; a starter skill is injected for a request that matches it and not for
 * "say hello".
 */
import assert from 'node:assert/strict';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { SideRequestKind } from '../../src/conversation/index.js';
import { isEvolverCall, isExtractorCall } from '../support/evolver.js';
import { homeWithStarterSkills, recordedTurn, runProgram, startProxy, tempHome, waitFor, type CliResult, type ProxyHandle } from '../support/proxy.js';
import { anthropicReply, openAIReply, responsesReply, ScriptedUpstream, type RecordedRequest, type ReplyOptions } from '../support/upstream.js';
import { installAgent, type AgentPackage } from './toolchain.js';

/** Matches the starter skill git-commit-hygiene; the upstream answers it with a tool call first. */
const SKILL_PROMPT = 'how do I squash my last three git commits';
const HELLO_PROMPT = 'say hello';
const FINAL = 'Squash them with git rebase -i HEAD~3, then mark the last two as squash.';
const HELLO = 'Hello from the scripted upstream.';
/** Only the shell running this command prints it: proof that the tool ran and its output came back. */
const TOOL_COMMAND = 'echo metaclaw-$((40+2))';
const TOOL_OUTPUT = 'metaclaw-42';

interface Agent {
  title: string;
  /** its claw_type */
  claw: 'claude-code' | 'codex' | 'qwen-code' | 'opencode';
  package: AgentPackage;
  /** the upstream the proxy is configured with: the API the client speaks, or Chat Completions to translate to */
  upstreamFormat: 'anthropic' | 'openai' | 'openai-responses';
  /** what sets this configuration of the client apart from another of the same client */
  variant?: string;
  /** its config folder under HOME: wiring writes into an existing one, as after a first run */
  configFolder: string;
  /** the user's own settings from before MetaClaw: update checks and usage statistics off */
  userConfig?: { file: string; text: string };
  env: Record<string, string>;
  /** headless, allowed to run its tools without asking */
  args(prompt: string): string[];
  tool: { name: string; arguments: Record<string, string> };
  /** where the proxy finds the client's session id ('fingerprint' when it sends none) */
  identity: 'header' | 'fingerprint';
  /** the client's own side request and the run that makes it */
  sideRequest?: { kind: SideRequestKind; prompt: string };
  /** opencode quotes a message that has spaces before sending it */
  userRequest?(prompt: string): string;
}

/** Codex, run against either kind of upstream. */
const CODEX: Omit<Agent, 'variant' | 'upstreamFormat'> = {
  title: 'Codex',
  claw: 'codex',
  package: { name: '@openai/codex', version: '0.171.0', binary: 'codex' },
  configFolder: '.codex',
  // Some models of its own catalog (gpt-5.6-sol, below) get the tools in code mode (a JavaScript `exec` that calls the
  // others); other models, and any model name outside it as with a provider of the user's own, get plain function tools.
  userConfig: {
    file: '.codex/config.toml',
    text: 'model = "scripted-model"\ncheck_for_update_on_startup = false\n\n[analytics]\nenabled = false\n\n[feedback]\nenabled = false\n',
  },
  env: {},
  // Its sandbox needs bubblewrap and user namespaces, which a container may lack; the command is a harmless echo.
  args: (prompt) => ['exec', '--skip-git-repo-check', '--dangerously-bypass-approvals-and-sandbox', prompt],
  tool: { name: 'exec_command', arguments: { cmd: TOOL_COMMAND } },
  identity: 'header',
};

const AGENTS: Agent[] = [
  {
    title: 'Claude Code',
    claw: 'claude-code',
    // Its postinstall fetches the native binary from the platform package; Claude Code asks for Node >= 22.
    package: { name: '@anthropic-ai/claude-code', version: '2.1.197', binary: 'claude', node24: true },
    upstreamFormat: 'anthropic',
    configFolder: '.claude',
    // Not CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: it also turns off the session-title request, the side request to see.
    env: { ANTHROPIC_API_KEY: 'sk-ant-users-own-login', DISABLE_TELEMETRY: '1', DISABLE_AUTOUPDATER: '1', DISABLE_ERROR_REPORTING: '1' },
    args: (prompt) => ['-p', prompt, '--output-format', 'json', '--allowedTools', 'Bash'],
    tool: { name: 'Bash', arguments: { command: TOOL_COMMAND, description: 'Print a marker' } },
    identity: 'header',
    sideRequest: { kind: 'title', prompt: SKILL_PROMPT },
  },
  { ...CODEX, variant: 'Responses API upstream', upstreamFormat: 'openai-responses' },
  { ...CODEX, variant: 'Chat Completions upstream', upstreamFormat: 'openai' },
  {
    ...CODEX,
    // Its catalog's first model gets its tools in an `additional_tools` item, in code mode: `exec` is a custom
    // (freeform JavaScript) tool, which the proxy turns into a chat function tool and its call back into a custom_tool_call.
    variant: 'Chat Completions upstream, its catalog model in code mode',
    upstreamFormat: 'openai',
    userConfig: { file: '.codex/config.toml', text: CODEX.userConfig!.text.replace('"scripted-model"', '"gpt-5.6-sol"') },
    tool: { name: 'exec', arguments: { input: `text(await tools.exec_command({ cmd: ${JSON.stringify(TOOL_COMMAND)} }));` } },
  },
  {
    title: 'Qwen Code',
    claw: 'qwen-code',
    // Its launcher is a Node script; Qwen Code asks for Node >= 22.
    package: { name: '@qwen-code/qwen-code', version: '0.15.10', binary: 'qwen', node24: true },
    upstreamFormat: 'openai',
    configFolder: '.qwen',
    userConfig: {
      file: '.qwen/settings.json',
      text: '{\n  "general": { "enableAutoUpdate": false },\n  "privacy": { "usageStatisticsEnabled": false },\n  "telemetry": { "enabled": false }\n}\n',
    },
    env: {},
    args: (prompt) => ['-o', 'json', '--approval-mode', 'yolo', prompt],
    tool: { name: 'run_shell_command', arguments: { command: TOOL_COMMAND } },
    identity: 'fingerprint',
    // Its managed-memory helper runs after a turn that ends on the user's own message (not after a tool loop).
    sideRequest: { kind: 'memory', prompt: HELLO_PROMPT },
  },
  {
    title: 'opencode',
    claw: 'opencode',
    package: { name: 'opencode-ai', version: '1.18.33', binary: 'opencode' },
    upstreamFormat: 'openai',
    configFolder: '.config/opencode',
    userConfig: { file: '.config/opencode/opencode.json', text: '{\n  "autoupdate": false,\n  "share": "disabled"\n}\n' },
    env: { OPENCODE_DISABLE_AUTOUPDATE: '1', OPENCODE_DISABLE_MODELS_FETCH: '1', OPENCODE_DISABLE_LSP_DOWNLOAD: '1', OPENCODE_DISABLE_SHARE: '1' },
    args: (prompt) => ['run', '--format', 'json', '--auto', prompt],
    tool: { name: 'bash', arguments: { command: TOOL_COMMAND, description: 'Print a marker' } },
    identity: 'header',
    sideRequest: { kind: 'title', prompt: SKILL_PROMPT },
    userRequest: (prompt) => `"${prompt}"`,
  },
];

let upstream: ScriptedUpstream;
/** The client whose describe block runs now (they run one after the other). */
let active: Agent;

before(async () => {
  upstream = await ScriptedUpstream.start();
  upstream.defaultHandler = (request, response) => {
    const reply = isEvolverCall(request) ? { text: '{"changes": []}' } : isExtractorCall(request) ? { text: '{"memories": []}' } : agentReply(request);
    const handler = request.path.endsWith('/messages') ? anthropicReply : request.path.endsWith('/responses') ? responsesReply : openAIReply;
    return handler(reply)(request, response);
  };
});

after(async () => {
  await upstream?.close();
});

/** The final answer once a tool's output is back; a call of the client's shell tool for the skill prompt; else hello. */
function agentReply(request: RecordedRequest): ReplyOptions {
  const items = conversation(request);
  if (items.some(isToolResult)) return { text: FINAL };
  const offered = (request.body?.tools ?? []).some((tool: any) => (tool.name ?? tool.function?.name) === active.tool.name);
  const lastUser = items.filter((item) => item?.role === 'user').at(-1);
  if (offered && lastUser && messageText(lastUser).includes(SKILL_PROMPT))
    return { toolCalls: [{ id: 'call_e2e_1', name: active.tool.name, arguments: JSON.stringify(active.tool.arguments) }] };
  return { text: HELLO };
}

/** Messages (Chat Completions, Anthropic Messages) or input items (Responses). */
function conversation(request: RecordedRequest): any[] {
  const items = request.body?.messages ?? request.body?.input;
  return Array.isArray(items) ? items : [];
}

function isToolResult(item: any): boolean {
  return (
    item?.role === 'tool' ||
    item?.type === 'function_call_output' ||
    (Array.isArray(item?.content) && item.content.some((part: any) => part?.type === 'tool_result'))
  );
}

function messageText(item: any): string {
  if (typeof item.content === 'string') return item.content;
  return Array.isArray(item.content) ? item.content.map((part: any) => (typeof part?.text === 'string' ? part.text : '')).join('\n') : '';
}

/** The agent's own requests (MetaClaw's learning calls go to the same upstream). */
function agentRequests(since: number): RecordedRequest[] {
  return upstream.requests.slice(since).filter((request) => request.method === 'POST' && !isEvolverCall(request) && !isExtractorCall(request));
}

const skillsAdded = (turn: any): string[] =>
  (turn.added?.sections ?? [])
    .filter((section: any) => section.provider === 'skills')
    .flatMap((section: any) => section.details.skills.map((skill: any) => skill.name));

interface RunRecord {
  prompt: string;
  result: CliResult;
  /** what the upstream received from this run */
  requests: RecordedRequest[];
  /** the sessions this run's turns were recorded in, and whether each existed before it */
  sessions: Array<{ id: string; identity_source: string; existed: boolean }>;
  /** GET /v1/requests/{id} of each of this run's turns */
  turns: any[];
}

for (const agent of AGENTS) {
  const installed = installAgent(agent.package);
  const skip = 'skip' in installed ? installed.skip : undefined;

  describe(`${agent.title} ${agent.package.version} end to end (real CLI, wired with claw wire ${agent.claw}${agent.variant ? `, ${agent.variant}` : ''})`, () => {
    let proxy: ProxyHandle;
    let home: string;
    let work: string;
    let firstRequest: number;
    const seenTurns = new Set<string>();
    const runs: RunRecord[] = [];

    const sessions = async (): Promise<any[]> => JSON.parse((await proxy.cli(['sessions', 'list', '--json', '--limit', '100'])).stdout);

    /** Runs the CLI once and collects what the proxy recorded for it. */
    async function runAgent(prompt: string): Promise<RunRecord> {
      if (!('toolchain' in installed)) throw new Error('not installed');
      const { command, path } = installed.toolchain;
      const before = new Map((await sessions()).map((session) => [session.id, session.turn_count]));
      const since = upstream.requests.length;
      const result = await runProgram(command, agent.args(prompt), {
        env: { PATH: path, HOME: home, NODE_OPTIONS: '', ...agent.env },
        cwd: work,
        timeoutMs: 180_000,
      });
      // Every request the upstream answered is a turn; the records are written after the answers.
      const expected = agentRequests(firstRequest).length;
      const listed = await waitFor(async () => {
        const list = await sessions();
        return list.reduce((sum, session) => sum + session.turn_count, 0) === expected ? list : undefined;
      }, 20_000);
      const touched = listed.filter((session) => before.get(session.id) !== session.turn_count);
      const turns: any[] = [];
      for (const session of touched) {
        const shown = JSON.parse((await proxy.cli(['sessions', 'show', session.id, '--json'])).stdout);
        for (const turn of shown.turns) {
          if (seenTurns.has(turn.id)) continue;
          seenTurns.add(turn.id);
          turns.push(await recordedTurn(proxy.url, turn.id));
        }
      }
      const record = {
        prompt,
        result,
        requests: agentRequests(since),
        sessions: touched.map((session) => ({ id: session.id, identity_source: session.identity_source, existed: before.has(session.id) })),
        turns,
      };
      runs.push(record);
      return record;
    }

    function assertReplied(run: RunRecord, text: string): void {
      assert.equal(run.result.code, 0, `${agent.title} exited with ${run.result.code}:\n${run.result.stdout.slice(-2000)}\n${run.result.stderr.slice(-3000)}`);
      assert.ok(run.result.stdout.includes(text), `${agent.title} printed the scripted answer:\n${run.result.stdout.slice(-2000)}`);
    }

    function assertOneNewSession(run: RunRecord): void {
      assert.ok(run.turns.length > 0, 'the run was recorded');
      assert.deepEqual(
        run.sessions.map((session) => [session.existed, session.identity_source]),
        [[false, agent.identity]],
        `every turn of the run is in one new session (${JSON.stringify(run.sessions)})`,
      );
    }

    before(async () => {
      if ('failure' in installed) throw installed.failure;
      if (skip) return;
      active = agent;
      firstRequest = upstream.requests.length;
      const metaclawHome = await homeWithStarterSkills();
      const apiBase = agent.upstreamFormat === 'anthropic' ? upstream.url : `${upstream.url}/v1`;
      // The scripted upstream answers as the agent's model, and every request it sees is counted as the agent's:
      // no search keys calls (the learning job a second request in a language queues).
      proxy = await startProxy({
        home: metaclawHome,
        config: {
          llm: { api_base: apiBase, api_format: agent.upstreamFormat, api_key: 'sk-upstream-e2e' },
          skills: { search_keys: false },
          memory: { search_keys: false },
        },
      });
      home = tempHome(`agent-e2e-${agent.claw}-`);
      work = join(home, 'project');
      mkdirSync(work);
      mkdirSync(join(home, agent.configFolder), { recursive: true });
      if (agent.userConfig) {
        mkdirSync(dirname(join(home, agent.userConfig.file)), { recursive: true });
        writeFileSync(join(home, agent.userConfig.file), agent.userConfig.text);
      }
      const wired = await proxy.cli(['claw', 'wire', agent.claw], { env: { HOME: home } });
      assert.equal(wired.code, 0, wired.stdout + wired.stderr);
    });

    after(async () => {
      await proxy?.dispose();
      if (home) rmSync(home, { recursive: true, force: true });
    });

    test(
      'a run with a tool call: the CLI runs the shell command, its output goes back upstream, the final answer arrives, and the run is one new session',
      { skip },
      async () => {
        const run = await runAgent(SKILL_PROMPT);
        assertReplied(run, FINAL);
        assert.ok(
          run.requests.some((request) => conversation(request).some((item) => isToolResult(item) && JSON.stringify(item).includes(TOOL_OUTPUT))),
          "the tool's output reached the upstream in the next request",
        );
        assert.ok(run.turns.filter((turn) => turn.turn_type === 'main').length >= 2, 'the request and the tool result are main turns');
        assertOneNewSession(run);
      },
    );

    test('a request that matches a starter skill gets the skill injected', { skip }, () => {
      const [run] = runs;
      assert.ok(run, 'the tool-call run ran');
      const first = run.turns.find((turn) => turn.turn_type === 'main');
      assert.ok(first, 'the run has a main turn');
      assert.ok(skillsAdded(first).includes('git-commit-hygiene'), `skills added: ${JSON.stringify(first?.added)}`);
      const forwarded = run.requests.find((request) => !isToolResult(conversation(request).at(-1)) && request.raw.includes('<metaclaw-context>'));
      assert.ok(forwarded?.raw.includes('git-commit-hygiene'), 'the skill reached the upstream in the forwarded body');
    });

    test('"say hello" gets its answer with no skill injected, recorded as a new session of its own', { skip }, async () => {
      const run = await runAgent(HELLO_PROMPT);
      assertReplied(run, HELLO);
      for (const turn of run.turns) assert.deepEqual(skillsAdded(turn), [], `no skill for "${HELLO_PROMPT}": ${JSON.stringify(turn.added)}`);
      for (const request of run.requests) assert.ok(!request.raw.includes('## Active Skills'), 'no skills block reached the upstream');
      assertOneNewSession(run);
    });

    test('a second run of the same prompt is a session of its own', { skip }, async () => {
      const run = await runAgent(HELLO_PROMPT);
      assertReplied(run, HELLO);
      assertOneNewSession(run);
    });

    if (agent.sideRequest) {
      const { kind, prompt } = agent.sideRequest;
      test(`its own side request (${kind}) is recorded as a side turn, with nothing injected`, { skip }, () => {
        const run = runs.find((candidate) => candidate.prompt === prompt);
        assert.ok(run, `a "${prompt}" run ran`);
        const side = run.turns.filter((turn) => turn.turn_type === 'side');
        assert.ok(
          side.some((turn) => turn.side_request === kind),
          `a ${kind} side turn among ${JSON.stringify(run.turns.map((turn) => [turn.turn_type, turn.side_request]))}`,
        );
        for (const turn of side) assert.equal(turn.added, null, 'nothing injected into a side request');
        for (const turn of runs.flatMap((each) => each.turns).filter((each) => each.turn_type === 'main')) assert.equal(turn.side_request, null);
      });
    }

    test(
      "nothing of the client's wrapper text is learned: the retrieval query is what the user typed and there are no standing instructions",
      { skip },
      async () => {
        assert.ok(
          runs.some((run) => run.turns.some((turn) => turn.turn_type === 'main')),
          'the runs were recorded',
        );
        for (const run of runs) {
          const expected = agent.userRequest ? agent.userRequest(run.prompt) : run.prompt;
          for (const turn of run.turns.filter((each) => each.turn_type === 'main'))
            assert.equal(turn.received.user_request, expected, `the retrieval query of turn ${turn.id}`);
        }
        const core = await proxy.cli(['memory', 'core', '--json']);
        assert.equal(core.code, 0, core.stderr);
        assert.deepEqual(JSON.parse(core.stdout), [], 'no standing instructions learned from the client');
        for (const turn of runs.flatMap((run) => run.turns)) assert.equal(turn.received.client_profile, agent.claw, 'recognised as the client it is');
      },
    );
  });
}
