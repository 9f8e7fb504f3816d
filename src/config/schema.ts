import { z } from 'zod';
import { CONFIG_LOG_LEVELS } from '../logging/levels.js';
import {
  booleanKey,
  calendarSourceKey,
  databaseUrlKey,
  enumKey,
  integerKey,
  listKey,
  numberKey,
  pathKey,
  secretKey,
  stringKey,
  timeOfDayKey,
  urlKey,
  variableNameKey,
} from './kinds.js';
import type { KeyDefinition, NoEffect } from './types.js';
import { maskSecret } from './convert.js';

/**
 * The one source of truth for configuration: every key of `config.yaml` with its default, type and
 * a one-line doc. MetaClaw's keys keep their names (so an existing MetaClaw config loads), ours are
 * added beside them. Paths left empty resolve under METACLAW_HOME.
 */

const compatibility = (reason: string): NoEffect => ({ status: 'compatibility', reason });
const NO_SELF_UPGRADE = compatibility("MetaClaw's memory policy self-upgrade is not part of MetaClaw-TS");

export const MODES = ['skills_only', 'rl', 'auto'] as const;
export const CLAW_TYPES = [
  'openclaw',
  'copaw',
  'ironclaw',
  'picoclaw',
  'zeroclaw',
  'nanoclaw',
  'nemoclaw',
  'hermes',
  'claude-code',
  'codex',
  'qwen-code',
  'opencode',
  'none',
] as const;
export const API_FORMATS = ['auto', 'openai', 'anthropic', 'openai-responses'] as const;

export const upstreamEntrySchema = z
  .object({
    name: z.string().min(1).optional(),
    api_base: z.string().regex(/^https?:\/\/\S+$/i, 'expected an http(s) URL'),
    api_key: z.string().optional(),
    api_key_env: z.string().optional(),
    model_id: z.string().optional(),
    api_format: z.enum(API_FORMATS).optional(),
  })
  .strict();
export type UpstreamEntry = z.infer<typeof upstreamEntrySchema>;

/** Fallbacks as they may be shown: each entry's api_key masked (also in a value being refused, whatever its shape). */
function redactFallbackKeys(value: unknown): unknown {
  if (!Array.isArray(value)) return value;
  return value.map((entry: unknown) =>
    entry !== null && typeof entry === 'object' && 'api_key' in entry
      ? { ...entry, api_key: maskSecret(typeof entry.api_key === 'string' ? entry.api_key : JSON.stringify(entry.api_key)) }
      : entry,
  );
}

export const KEY_DEFINITIONS = [
  enumKey('mode', MODES, 'skills_only', {
    doc: 'skills_only: skills + memory through your own API; rl: also record, judge and train; auto: rl plus the idle-window scheduler (legacy name: madmax). rl and auto without a training backend (rl.api_key) run as skills_only and still record and judge samples.',
  }),
  enumKey('claw_type', CLAW_TYPES, 'none', { doc: 'Which agent `metaclaw start` wires to the proxy (none: wire nothing).' }),
  booleanKey('claw_plugin', false, {
    doc: "Also enable the agent's MetaClaw plugin where one exists (OpenClaw: keeps the proxy running and reports session ends).",
  }),
  enumKey('claw_api_format', ['openai', 'anthropic'] as const, 'openai', {
    doc: 'Protocol a wired agent uses to reach the proxy, where it has a choice (OpenClaw: openai-completions or anthropic-messages).',
  }),
  integerKey('max_context_tokens', 0, {
    min: 0,
    doc: 'Trim the oldest non-system messages of each request so the prompt, plus the max_tokens it asks for, fits this many tokens (0: never trim; the agent manages its context).',
  }),
  integerKey('context_window', 0, { min: 0, doc: 'Context window advertised to wired agents (0: let the agent use its own default).' }),

  enumKey(
    'llm.provider',
    ['custom', 'openai', 'anthropic', 'kimi', 'qwen', 'deepseek', 'minimax', 'novita', 'openrouter', 'volcengine', 'ollama'] as const,
    'custom',
    {
      doc: 'Provider preset used by `metaclaw setup`; its embeddings endpoint, if it has one, is probed at setup and start for hybrid retrieval (api_base decides where requests go).',
    },
  ),
  enumKey('llm.auth_method', ['api_key', 'passthrough'] as const, 'api_key', {
    doc: "api_key: send llm.api_key upstream; passthrough: forward the client's own Authorization / x-api-key.",
  }),
  stringKey('llm.model_id', '', { doc: "Upstream model. When set, every request to the main upstream uses it; when empty the client's model passes through." }),
  urlKey('llm.api_base', '', {
    doc: 'Base URL of the upstream API (OpenAI-compatible: ends in /v1; Anthropic: https://api.anthropic.com). Empty: from env or OpenAI.',
  }),
  secretKey('llm.api_key', { doc: "API key for llm.api_base. Empty: use the client's own key (pass-through)." }),
  variableNameKey('llm.api_key_env', {
    doc: 'Name of an environment variable holding the key for llm.api_base, read when the proxy starts (used when llm.api_key is empty), so the key stays out of config.yaml.',
  }),
  enumKey('llm.api_format', API_FORMATS, 'auto', {
    doc: 'Wire format of the upstream: openai (chat completions), openai-responses (chat completions, and Responses API requests passed through to its /responses), anthropic (messages), or auto (from provider and URL; api.openai.com serves /responses).',
  }),
  integerKey('llm.max_retries', 2, { min: 0, max: 10, doc: 'Retries per upstream for connection errors, 408/409/429/5xx, before trying the next fallback.' }),
  numberKey('llm.timeout_seconds', 600, { min: 0.1, doc: 'Give up on an upstream that sends nothing (no headers, or no bytes mid-stream) for this long.' }),
  numberKey('llm.max_retry_wait_seconds', 60, {
    min: 0,
    doc: 'Longest retry-after the proxy will wait for; a longer one moves straight to the next upstream.',
  }),
  integerKey('llm.default_max_tokens', 4096, {
    min: 1,
    doc: 'max_tokens sent to an Anthropic upstream when an OpenAI client did not set one (Anthropic requires it).',
  }),
  listKey('llm.fallbacks', upstreamEntrySchema, [], {
    expected: 'a list of {api_base, api_key?, api_key_env?, model_id?, api_format?, name?}',
    redact: redactFallbackKeys,
    doc: 'Upstreams tried in order when the main one keeps failing (only while nothing has reached the client).',
  }),

  stringKey('proxy.host', '127.0.0.1', { doc: 'Address to listen on. Anything but loopback requires proxy.api_key.' }),
  integerKey('proxy.port', 30000, { min: 1, max: 65535, doc: 'Port to listen on.' }),
  secretKey('proxy.api_key', { doc: 'Key clients must present (Bearer, x-api-key or x-metaclaw-api-key). Required when binding beyond loopback.' }),
  numberKey('proxy.max_body_mb', 32, { min: 0.001, doc: 'Largest request body accepted, in MiB (larger: 413).' }),
  numberKey('proxy.request_timeout_seconds', 300, {
    min: 0,
    doc: 'Longest a request may take to arrive, headers and body (later: 408, connection closed); answers, streams included, are not timed. 0: no limit.',
  }),
  numberKey('proxy.shutdown_timeout_seconds', 10, { min: 0, doc: 'On stop, how long running streams may finish before they are cut.' }),
  stringKey('proxy.served_model_name', 'metaclaw', { doc: 'Model name /v1/models reports when the upstream cannot list models.' }),
  listKey('proxy.allowed_origins', z.string().min(1).max(500), [], {
    expected: 'a list of origins, e.g. [chrome-extension://abcdefghijklmnop]',
    doc: 'Browser origins (an extension, a web app of yours) whose requests may change things through the proxy; any other page of another origin gets 403 origin_not_allowed.',
  }),

  booleanKey('skills.enabled', true, { doc: 'Inject relevant skills into each main turn.' }),
  pathKey('skills.dir', '', { doc: 'Skill library folder of <name>/SKILL.md files (default: $METACLAW_HOME/skills).' }),
  enumKey('skills.retrieval_mode', ['template', 'embedding', 'hybrid'] as const, 'template', {
    doc: "template: keyword/BM25; embedding: vectors from skills.embedding; hybrid: both. Not set: hybrid while the provider's embeddings answer (llm.provider), else template.",
  }),
  integerKey('skills.top_k', 6, { min: 0, max: 50, doc: 'Most skills injected into one turn.' }),
  integerKey('skills.task_specific_top_k', 10, {
    min: 0,
    max: 50,
    noEffect: compatibility('skills are ranked by relevance across every category; skills.top_k caps them'),
    doc: 'MetaClaw key: caps category-matched candidates before ranking.',
  }),
  integerKey('skills.full_body_top_n', 2, {
    min: 0,
    max: 50,
    doc: 'How many of the injected skills carry their full body; the rest show name and description.',
  }),
  integerKey('skills.max_tokens', 1500, { min: 0, doc: 'Token budget for the injected skills block.' }),
  numberKey('skills.min_relevance', 0.35, { min: 0, max: 1, doc: 'Relevance threshold (0..1) below which a skill is never injected.' }),
  booleanKey('skills.auto_evolve', true, { doc: 'Write new skills (or improve existing ones) from finished sessions.' }),
  booleanKey('skills.search_keys', true, {
    doc: "Have the learning model write search keys for every skill in the languages you write (the skill's own included: the other words people ask with), so a request in other words or another language finds it. Off: only the skills' text and the bundled glossary are searched (keys written before stay indexed).",
  }),
  integerKey('skills.evolution_every_n_turns', 10, { min: 0, doc: 'Also evolve every N main turns of a session (0: only at session end).' }),
  enumKey('skills.review', ['auto', 'manual'] as const, 'auto', {
    doc: 'auto: accepted skill changes apply at once; manual: they wait in `metaclaw skills pending`.',
  }),
  integerKey('skills.max_new_skills', 3, { min: 1, max: 20, doc: 'Most skill changes one evolution may propose.' }),
  urlKey('skills.embedding.api_base', '', {
    doc: "OpenAI-compatible /v1 base for embeddings (Ollama works). Empty: the provider's own endpoint while its probe answers (llm.provider), else keyword retrieval only.",
  }),
  secretKey('skills.embedding.api_key', { doc: 'Key for skills.embedding.api_base.' }),
  stringKey('skills.embedding.model', '', { doc: 'Embedding model name.' }),

  booleanKey('memory.enabled', true, { doc: 'Extract, keep and recall long-term memories.' }),
  // MetaClaw-TS keeps its own memories in $METACLAW_HOME/metaclaw.db: these two only name MetaClaw's store.
  pathKey('memory.dir', '', {
    doc: "The Python MetaClaw's memory folder (default: memory/ in this home): `metaclaw doctor` offers to import its memory.db. MetaClaw-TS's own memories live in metaclaw.db.",
  }),
  pathKey('memory.store_path', '', {
    doc: "The Python MetaClaw's memory database (default: memory.dir/memory.db): `metaclaw doctor` offers to import it (`metaclaw memory import FILE`). MetaClaw-TS's own memories live in metaclaw.db.",
  }),
  pathKey('memory.policy_path', '', {
    noEffect: compatibility('retrieval is set by the memory.* keys; there is no policy file'),
    doc: "MetaClaw's memory policy file.",
  }),
  pathKey('memory.telemetry_path', '', { noEffect: compatibility('no memory telemetry file is written'), doc: "MetaClaw's memory telemetry log." }),
  stringKey('memory.sidecar_url', '', {
    noEffect: compatibility('memory runs inside the proxy; there is no sidecar'),
    doc: "MetaClaw's memory sidecar address.",
  }),
  stringKey('memory.scope', 'default', {
    doc: 'Scope used when a request names no X-Memory-Scope, X-User-Id or X-Workspace-Id.',
    // An empty scope could not be named to the HTTP API nor imported back from an export.
    nonEmpty: true,
  }),
  enumKey('memory.retrieval_mode', ['keyword', 'embedding', 'hybrid', 'auto'] as const, 'hybrid', {
    doc: 'keyword: BM25 only (nothing is embedded); hybrid/auto: BM25 plus vectors when memory.embedding is set; embedding: vector similarity alone finds and ranks units (keywords only while vectors are unavailable).',
  }),
  integerKey('memory.top_k', 6, { min: 0, max: 50, doc: 'Most memory units recalled into one turn.' }),
  integerKey('memory.max_tokens', 800, { min: 0, doc: 'Token budget for recalled memories.' }),
  numberKey('memory.min_relevance', 0.3, {
    min: 0,
    max: 1,
    doc: 'Relevance threshold (0..1) below which a memory is not recalled (unless it matches a time the query names).',
  }),
  integerKey('memory.core_max_tokens', 400, { min: 0, doc: 'Token budget for standing instructions injected on every main turn.' }),
  integerKey('memory.max_injected_units', 6, { min: 0, max: 50, doc: 'MetaClaw name for memory.top_k (the smaller of the two applies).' }),
  integerKey('memory.max_injected_tokens', 800, { min: 0, doc: 'MetaClaw name for memory.max_tokens (the smaller of the two applies).' }),
  integerKey('memory.flush_every_n_turns', 5, { min: 1, doc: 'Extract memories every N turns of a session, and at session end.' }),
  booleanKey('memory.auto_extract', true, { doc: 'Extract memories from conversations automatically.' }),
  booleanKey('memory.search_keys', true, {
    doc: "Have the learning model write search keys for memories in the languages you write (a memory's own language too when it came without the extractor's keys), so a question in other words or another language finds it. Off: no memory keys job runs (keys written before stay indexed).",
  }),
  booleanKey('memory.auto_consolidate', true, {
    doc: 'Daily housekeeping merges near-duplicates and decays stale unused episodic units (false: only retention and the per-scope cap apply).',
  }),
  booleanKey('memory.ignore_turn_type', false, { doc: 'Also learn from side turns (X-Turn-Type: side).' }),
  booleanKey('memory.manual_trigger', false, { doc: 'Only extract when asked (POST /v1/memory/ingest or `metaclaw memory ingest`).' }),
  booleanKey('memory.use_embeddings', false, {
    noEffect: compatibility('vectors are used whenever memory.embedding.api_base and memory.embedding.model are set'),
    doc: 'MetaClaw key: use vectors for memory.',
  }),
  enumKey('memory.embedding_mode', ['hashing', 'semantic'] as const, 'hashing', {
    noEffect: compatibility('there is no local hashing embedder; vectors come from memory.embedding.api_base'),
    doc: 'MetaClaw key: hashing (local hashed vectors) or semantic (a local embedding model).',
  }),
  stringKey('memory.embedding_model', '', {
    noEffect: compatibility('no local embedding model is run; set memory.embedding.model for the embeddings endpoint'),
    doc: 'MetaClaw key: the local embedding model.',
  }),
  stringKey('memory.embedding_model_path', '', {
    noEffect: compatibility('no local embedding model is run; set memory.embedding.model for the embeddings endpoint'),
    doc: 'MetaClaw key: where the local embedding model is.',
  }),
  urlKey('memory.embedding.api_base', '', {
    doc: "OpenAI-compatible /v1 base for memory embeddings. Empty: the provider's own endpoint while its probe answers (llm.provider), else BM25, recency and importance only.",
  }),
  secretKey('memory.embedding.api_key', { doc: 'Key for memory.embedding.api_base.' }),
  stringKey('memory.embedding.model', '', { doc: 'Embedding model for memories.' }),
  urlKey('memory.extractor_api_base', '', { doc: 'Endpoint for the memory extractor LLM (empty: the main upstream).' }),
  secretKey('memory.extractor_api_key', { doc: 'Key for memory.extractor_api_base.' }),
  stringKey('memory.extractor_model', '', { doc: 'Model for memory extraction (empty: llm.model_id).' }),
  integerKey('memory.retention_days', 365, { min: 0, doc: 'Raw episodic turns older than this are dropped (0: keep forever).' }),
  integerKey('memory.max_units_per_scope', 20000, { min: 100, doc: 'Hard cap on stored units per scope; the least useful episodic units go first.' }),
  booleanKey('memory.auto_upgrade_enabled', false, { noEffect: NO_SELF_UPGRADE, doc: 'MetaClaw key: let the memory policy upgrade itself.' }),
  integerKey('memory.auto_upgrade_interval_seconds', 900, { min: 30, noEffect: NO_SELF_UPGRADE, doc: 'MetaClaw key: how often the policy upgrade runs.' }),
  booleanKey('memory.auto_upgrade_require_review', true, { noEffect: NO_SELF_UPGRADE, doc: 'MetaClaw key: policy upgrades wait for review.' }),
  // MetaClaw documents it without reading it, so its type is unknown: any scalar loads.
  stringKey('memory.consolidation_interval', '', {
    noEffect: compatibility('consolidation runs in the daily housekeeping, see memory.auto_consolidate'),
    doc: 'MetaClaw key: how often memories are consolidated.',
  }),
  integerKey('memory.review_stale_after_hours', 72, { min: 1, noEffect: NO_SELF_UPGRADE, doc: 'MetaClaw key: when a pending policy review goes stale.' }),

  booleanKey('rl.enabled', false, { doc: 'Record RL samples and score them with the judge even in skills_only mode (for `metaclaw rl export`).' }),
  enumKey('rl.backend', ['auto', 'tinker', 'mint', 'weaver', 'file'] as const, 'auto', {
    doc: 'Training backend: a Tinker-compatible service (tinker, mint; auto picks mint for an sk-mint- key, a MinT URL or MINT_API_KEY) or file (export only). weaver has no client.',
  }),
  stringKey('rl.model', '', { doc: 'Base model to train and serve from in modes rl and auto (default: llm.model_id), e.g. Qwen/Qwen3-8B.' }),
  pathKey('rl.tokenizer_path', '', {
    doc: "Folder with the base model's tokenizer.json and tokenizer_config.json (its chat template), for serving from the policy. Empty: $METACLAW_HOME/tokenizers/<rl.model>, downloaded once from the Hugging Face hub.",
  }),
  secretKey('rl.api_key', {
    doc: 'Training backend key (legacy name: rl.tinker_api_key; else TINKER_API_KEY or MINT_API_KEY). Without one, rl and auto run as skills_only.',
  }),
  urlKey('rl.base_url', '', { doc: 'Training backend URL (legacy name: rl.tinker_base_url).' }),
  urlKey('rl.prm_url', 'https://api.openai.com/v1', {
    doc: 'OpenAI-compatible endpoint of the judge (PRM) model. Used when set (or when rl.prm_api_key is); otherwise the judge calls the main upstream.',
  }),
  stringKey('rl.prm_model', 'gpt-5.2', { doc: "Judge model. On the main upstream it is used only when set; otherwise the judged session's model." }),
  secretKey('rl.prm_api_key', { doc: 'Key for rl.prm_url.' }),
  integerKey('rl.prm_m', 3, { min: 1, max: 9, doc: 'Judge votes per turn: the score more than half agree on is the reward; a tie or failure gives none.' }),
  integerKey('rl.lora_rank', 32, { min: 1, doc: 'LoRA rank of the policy created on the training backend.' }),
  integerKey('rl.batch_size', 4, { min: 1, doc: 'Judged samples per training step; a step in a window waits for a full batch.' }),
  numberKey('rl.learning_rate', 0.0001, { above: 0, doc: 'Adam learning rate (more than 0).' }),
  enumKey('rl.loss_fn', ['importance_sampling', 'ppo', 'cispo'] as const, 'importance_sampling', {
    doc: 'Loss function asked of the backend.',
  }),
  stringKey('rl.resume_from_ckpt', '', {
    doc: 'Backend path of saved training state to start from; once a step has saved its own state, restarts resume from that instead.',
  }),
  integerKey('rl.sampling_timeout_seconds', 60, {
    min: 1,
    doc: 'How long the policy may take to answer a turn (render and sampling) before the normal upstream answers it instead (not trainable).',
  }),
  urlKey('rl.evolver_api_base', '', { doc: 'Endpoint of the skill-evolver LLM (empty: the main upstream).' }),
  secretKey('rl.evolver_api_key', { doc: 'Key for rl.evolver_api_base.' }),
  stringKey('rl.evolver_model', '', { doc: 'Skill-evolver model (empty: llm.model_id).' }),
  booleanKey('rl.manual_train_trigger', false, {
    doc: 'Train only when asked (`metaclaw rl train-step` / POST /v1/rl/train_step), never by itself in a window.',
  }),

  booleanKey('opd.enabled', false, {
    doc: "On-policy distillation in modes rl and auto: each trained answer also gets a per-token KL term toward a teacher model's logprobs.",
  }),
  urlKey('opd.teacher_url', '', {
    doc: "OpenAI-compatible /v1 endpoint of the teacher; its /completions must take token ids with echo and logprobs (vLLM, SGLang), and it must share the base model's tokenizer.",
  }),
  stringKey('opd.teacher_model', '', { doc: 'Teacher model.' }),
  secretKey('opd.teacher_api_key', { doc: 'Key for opd.teacher_url (empty: none sent).' }),
  numberKey('opd.kl_penalty_coef', 1.0, { min: 0, doc: 'Weight of the KL term added to the advantages.' }),

  booleanKey('scheduler.enabled', false, { doc: 'Train only in idle windows (always on in auto mode); see `metaclaw scheduler status`.' }),
  timeOfDayKey('scheduler.sleep_start', '23:00', { doc: 'Start of the nightly window (local time).' }),
  timeOfDayKey('scheduler.sleep_end', '07:00', { doc: 'End of the nightly window (local time; before sleep_start: the window wraps midnight).' }),
  integerKey('scheduler.idle_threshold_minutes', 30, {
    min: 1,
    doc: 'Keyboard idle time that opens a window; also how long without a main turn through the proxy before any window may open (and the idle signal where the keyboard cannot be read).',
  }),
  integerKey('scheduler.min_window_minutes', 15, {
    min: 0,
    doc: 'A window whose end is known (sleep hours, a calendar event) opens only with at least this long left.',
  }),
  booleanKey('scheduler.calendar.enabled', false, {
    noEffect: compatibility('a calendar is read whenever one is configured: scheduler.calendar.ics_url, or credentials_path / token_path for Google'),
    doc: 'MetaClaw key: open a window while a calendar event says you are busy.',
  }),
  pathKey('scheduler.calendar.credentials_path', '', {
    doc: 'Google Calendar: the OAuth client file (a Desktop app client from Google Cloud) that `metaclaw scheduler calendar-auth` signs in with. Used when ics_url is empty.',
  }),
  pathKey('scheduler.calendar.token_path', '', {
    doc: "Google Calendar: where the read-only token is kept (mode 0600; MetaClaw's calendar_token.json reads as is). Empty: $METACLAW_HOME/calendar_token.json.",
  }),
  calendarSourceKey('scheduler.calendar.ics_url', {
    doc: "ICS calendar (a file path, or an http(s)/webcal URL such as Google Calendar's secret iCal address) whose busy events open a window; reloaded every 15 minutes.",
  }),

  numberKey('session.idle_timeout_minutes', 30, { min: 0.01, doc: 'A session with no turns for this long is ended (and learned from).' }),

  integerKey('learning.daily_token_budget', 0, { min: 0, doc: 'Tokens per day learning jobs may spend on LLM calls (0: unlimited). Serving is never paused.' }),
  integerKey('learning.max_attempts', 5, { min: 1, max: 50, doc: 'Attempts per learning job before it goes to the dead-letter list.' }),
  integerKey('learning.concurrency', 1, { min: 1, max: 8, doc: 'Learning jobs run at once.' }),
  integerKey('learning.lease_seconds', 600, {
    min: 5,
    max: 86_400,
    doc: 'How long a running learning job is held (renewed while it runs); a process or team node that dies gives its jobs back after this.',
  }),

  integerKey('store.payload_retention_days', 30, {
    min: 0,
    doc: 'Full request/response bodies of turns are kept this long (0: forever); turn summaries stay.',
  }),
  databaseUrlKey('store.url', {
    doc: 'Team store: a postgres:// URL that `metaclaw start` serves from as one node of a team, and that `metaclaw store …` and `metaclaw team …` work on (also METACLAW_DATABASE_URL, or --store). Empty: the personal SQLite store in $METACLAW_HOME.',
  }),
  booleanKey('store.redact_turns', true, {
    doc: 'Redact secrets (API keys, tokens, private keys, passwords) from turn records: the request text, the answer and the stored bodies. What goes upstream is never changed.',
  }),
  enumKey('log.level', CONFIG_LOG_LEVELS, 'info', { doc: 'Log level of $METACLAW_HOME/logs/metaclaw.log.' }),
  numberKey('log.max_size_mb', 10, {
    min: 0,
    doc: 'Rotate metaclaw.log once it would grow past this many MiB: it becomes metaclaw.log.1, .1 becomes .2 … (0: never rotate).',
  }),
  integerKey('log.max_files', 5, { min: 1, max: 100, doc: 'Rotated logs kept (metaclaw.log.1 … .N); the oldest is deleted.' }),

  booleanKey('wechat.enabled', false, { noEffect: compatibility('there is no WeChat bridge'), doc: "MetaClaw's WeChat bridge." }),
] as const;

type Definition = (typeof KEY_DEFINITIONS)[number];
export type ConfigKey = Definition['key'];
/** Every key's value, flat by dotted key: `values['proxy.port']` is a number. */
export type ConfigValues = { [D in Definition as D['key']]: D['default'] };

/**
 * The teacher keys `opd.enabled` needs and `values` leaves empty: none when OPD is off or both are
 * set. With any missing, training runs without the teacher (and the config warns so).
 */
export function missingOpdTeacherKeys(values: ConfigValues): Array<'opd.teacher_url' | 'opd.teacher_model'> {
  if (!values['opd.enabled']) return [];
  return (['opd.teacher_url', 'opd.teacher_model'] as const).filter((key) => !values[key]);
}

/** MetaClaw's legacy key names and where they now live. */
export const KEY_ALIASES: Readonly<Record<string, string>> = {
  'rl.tinker_api_key': 'rl.api_key',
  'rl.tinker_base_url': 'rl.base_url',
};

/** Legacy values that mean something else now. */
export const VALUE_ALIASES: Readonly<Record<string, Readonly<Record<string, string>>>> = {
  mode: { madmax: 'auto' },
};

/** Legacy keys that are accepted and translated by a rule rather than renamed. */
export const LEGACY_RULES: Readonly<Record<string, string>> = {
  configure_openclaw: 'false means claw_type: none',
};

export const DEFINITIONS_BY_KEY: ReadonlyMap<string, KeyDefinition> = new Map(
  KEY_DEFINITIONS.map((definition) => [definition.key, definition as KeyDefinition]),
);

/** Every section name (`proxy`, `skills.embedding`, …) that holds keys. */
export const SECTIONS: ReadonlySet<string> = new Set(
  KEY_DEFINITIONS.flatMap((definition) => {
    const parts = definition.key.split('.');
    return parts.slice(0, -1).map((_, index) => parts.slice(0, index + 1).join('.'));
  }),
);
