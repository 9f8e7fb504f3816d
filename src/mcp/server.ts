import { McpServer, ResourceTemplate } from '@modelcontextprotocol/sdk/server/mcp.js';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { MAX_SESSION_ID_LENGTH } from '../conversation/index.js';
import { DEFAULT_MEMORY_TYPE, MEMORY_TYPES, memoryContentSchema, presentMemory, type MemoryApi } from '../memory/index.js';
import type { RetrievedSkill, Skill } from '../skills/index.js';
import type { Awaitable } from '../types/index.js';
import { VERSION } from '../version.js';

/**
 * The skills the server offers: the personal folder library or a live copy of the team store's
 * skills table (see skills.ts).
 */
export interface McpSkills {
  /** The skills a request would get injected, best first (waiting for the query's vector when vectors are in use). */
  search(query: string): Promise<RetrievedSkill[]>;
  all(): Skill[];
  /** The skill's SKILL.md (frontmatter and body); undefined when there is no such skill. */
  text(name: string): Awaitable<string | undefined>;
  /** Called on every skill added, changed or removed. */
  onChange(listener: () => void): void;
}

export interface McpStores {
  memory: MemoryApi;
  skills: McpSkills;
  /** memory.scope: where memories are read and written unless a call names another scope */
  defaultScope: string;
}

type ToolResult = { content: Array<{ type: 'text'; text: string }>; isError?: boolean };

const answer = (value: unknown): ToolResult => ({ content: [{ type: 'text', text: JSON.stringify(value, null, 2) }] });
const failure = (message: string): ToolResult => ({ content: [{ type: 'text', text: message }], isError: true });

/**
 * MetaClaw's memory and skills for any MCP client (Claude Code, Cursor, OpenClaw): the same
 * stores as the running proxy (the personal SQLite store, which WAL mode lets a second process
 * share, and the SKILL.md folder; or the team store), as five tools and one resource per skill. Arguments are checked against each
 * tool's schema by the SDK before a handler runs.
 */
export function createMcpServer(stores: McpStores): McpServer {
  const { memory, skills, defaultScope } = stores;
  const server = new McpServer({ name: 'metaclaw', version: VERSION });
  // The same cap as a scope named over HTTP or in the scope headers.
  // Blank is no name either (as `--scope` in the CLI): header-named scopes are trimmed, so no request could reach it.
  const scope = z
    .string()
    .min(1)
    .max(MAX_SESSION_ID_LENGTH)
    .refine((value) => value.trim() !== '', 'must name a scope (it is blank)')
    .optional()
    .describe(`memory scope (default: ${defaultScope})`);

  server.registerTool(
    'memory_search',
    {
      title: 'Search memory',
      description: 'Find what MetaClaw remembers about the user and their projects (facts, preferences, project state, earlier conversations).',
      inputSchema: { query: z.string().min(1).max(2_000), limit: z.number().int().min(1).max(50).optional(), scope },
    },
    async ({ query, limit, scope: asked }) => {
      const hits = await memory.search({ scope: asked ?? defaultScope, query, limit: limit ?? 10, includeSuperseded: false });
      return answer(hits.map((hit) => ({ ...presentMemory(hit.unit), score: Math.round(hit.score * 1000) / 1000 })));
    },
  );

  server.registerTool(
    'memory_add',
    {
      title: 'Remember',
      description: 'Store a memory: a fact, a preference or project state worth keeping across sessions.',
      inputSchema: {
        // As the HTTP API and the CLI take it: whitespace alone is no memory.
        content: memoryContentSchema,
        type: z.enum(MEMORY_TYPES).optional().describe(`default: ${DEFAULT_MEMORY_TYPE}`),
        importance: z.number().min(0).max(1).optional(),
        scope,
      },
    },
    async ({ content, type, importance, scope: asked }) => {
      const unit = await memory.add({
        scope: asked ?? defaultScope,
        type: type ?? DEFAULT_MEMORY_TYPE,
        content,
        importance: importance ?? 0.8,
        confidence: 1,
        core: false,
        pinned: false,
        origin: 'manual',
      });
      return answer(presentMemory(unit));
    },
  );

  server.registerTool(
    'memory_forget',
    {
      title: 'Forget',
      description: 'Delete a memory for good, by its id (from memory_search), also from the turns it came from or was injected into.',
      inputSchema: { id: z.string().min(1).max(100) },
      annotations: { destructiveHint: true },
    },
    async ({ id }) => {
      const removed = await memory.forget(id);
      return removed ? answer({ forgotten: id, content: removed.content }) : failure(`No memory with id ${id}.`);
    },
  );

  server.registerTool(
    'skills_search',
    {
      title: 'Search skills',
      description: "Find the skills (SKILL.md procedures) relevant to a task, as MetaClaw would inject them into the agent's prompt.",
      inputSchema: { query: z.string().min(1).max(2_000), limit: z.number().int().min(1).max(20).optional() },
    },
    async ({ query, limit }) =>
      answer(
        (await skills.search(query)).slice(0, limit ?? 5).map((hit) => ({
          name: hit.skill.name,
          description: hit.skill.description,
          category: hit.skill.category,
          relevance: Math.round(hit.relevance * 1000) / 1000,
        })),
      ),
  );

  server.registerTool(
    'skills_get',
    {
      title: 'Read a skill',
      description: 'The whole SKILL.md of a skill, by name.',
      inputSchema: { name: z.string().min(1).max(200) },
    },
    async ({ name }) => {
      const text = await skills.text(name);
      return text !== undefined ? { content: [{ type: 'text', text }] } : failure(`No skill named ${name}.`);
    },
  );

  server.registerResource(
    'skill',
    new ResourceTemplate('skill://{name}', {
      list: () => ({
        resources: skills.all().map((skill) => ({ uri: `skill://${skill.name}`, name: skill.name, description: skill.description, mimeType: 'text/markdown' })),
      }),
    }),
    { title: 'MetaClaw skill', description: 'A SKILL.md from the skill library.', mimeType: 'text/markdown' },
    async (uri, { name }) => {
      const text = await skills.text(String(name));
      // An unknown resource is the caller's mistake: the SDK's own code for it (SEP-2164), not an internal error.
      if (text === undefined) throw new McpError(ErrorCode.InvalidParams, `No skill named ${String(name)}.`);
      return { contents: [{ uri: uri.href, mimeType: 'text/markdown', text }] };
    },
  );
  // The server announces resources.listChanged, so a client may keep the list until told: a skill
  // added, edited (its description is in the list) or removed tells it.
  skills.onChange(() => server.sendResourceListChanged());
  return server;
}
