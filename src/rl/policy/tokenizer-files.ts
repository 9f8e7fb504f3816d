import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { errorMessage, MetaclawError } from '../../errors.js';
import { writeFileAtomic } from '../../shared/atomic-write.js';
import { parseJson } from '../../upstream/index.js';

/**
 * The base model's tokenizer files, found in this order: the folder `rl.tokenizer_path` names, the
 * cache folder under `$METACLAW_HOME/tokenizers/`, or a one-time download from the Hugging Face hub
 * into that cache. Every file is checked with zod before anything is built from it.
 */

export const TOKENIZER_FILE = 'tokenizer.json';
export const TOKENIZER_CONFIG_FILE = 'tokenizer_config.json';
/** Newer models keep the chat template in its own file instead of tokenizer_config.json. */
export const CHAT_TEMPLATE_FILE = 'chat_template.jinja';
/** Optional: its `eos_token_id` list says which tokens end a generation. */
export const GENERATION_CONFIG_FILE = 'generation_config.json';

export class TokenizerUnavailableError extends MetaclawError {
  constructor(message: string, options: { cause?: unknown } = {}) {
    super('tokenizer_unavailable', message, options);
  }
}

/** A special token written as a string or as an AddedToken object (`{"content": "<|im_end|>", ...}`). */
const tokenTextSchema = z.union([z.string(), z.looseObject({ content: z.string() })]).nullish();

/** The text of a special token as tokenizer_config.json writes it. */
export function tokenText(token: z.infer<typeof tokenTextSchema>): string | undefined {
  if (token === null || token === undefined) return undefined;
  return typeof token === 'string' ? token : token.content;
}

const namedTemplateSchema = z.looseObject({ name: z.string(), template: z.string() });

export const tokenizerConfigSchema = z.looseObject({
  chat_template: z.union([z.string(), z.array(namedTemplateSchema)]).optional(),
  eos_token: tokenTextSchema,
  bos_token: tokenTextSchema,
  pad_token: tokenTextSchema,
  added_tokens_decoder: z.record(z.string(), z.looseObject({ content: z.string(), special: z.boolean().optional() })).optional(),
});

export const tokenizerJsonSchema = z.looseObject({
  model: z.looseObject({ type: z.string().optional() }),
  added_tokens: z
    .array(
      z.looseObject({
        id: z.number().int(),
        content: z.string(),
        special: z.boolean(),
        normalized: z.boolean().optional(),
        lstrip: z.boolean().optional(),
        rstrip: z.boolean().optional(),
        single_word: z.boolean().optional(),
      }),
    )
    .default([]),
});

const generationConfigSchema = z.looseObject({ eos_token_id: z.union([z.number().int(), z.array(z.number().int())]).optional() });

export type TokenizerConfig = z.infer<typeof tokenizerConfigSchema>;
export type TokenizerJson = z.infer<typeof tokenizerJsonSchema>;

export interface TokenizerFiles {
  /** Where they were read from. */
  folder: string;
  tokenizer: TokenizerJson;
  config: TokenizerConfig;
  chatTemplate: string;
  /** From generation_config.json, when the folder has one. */
  generationEosIds: number[];
}

export interface TokenizerSource {
  /** `rl.tokenizer_path`, resolved; empty when not set. */
  tokenizerPath: string;
  /** The base model's hub id (`rl.model`, e.g. `Qwen/Qwen3-8B`). */
  model: string;
  /** `$METACLAW_HOME`. */
  home: string;
  /** Hub base URL; default `HF_ENDPOINT` or https://huggingface.co. */
  hubUrl?: string;
  /** Bearer token for gated models; default `HF_TOKEN`. */
  hubToken?: string;
  /** Per file; default 60 s. */
  downloadTimeoutMs?: number;
  fetch?: typeof fetch;
}

/** `$METACLAW_HOME/tokenizers/<org>__<name>`: where downloaded (or hand-copied) files live. */
export function tokenizerCacheDir(home: string, model: string): string {
  return join(home, 'tokenizers', model.replace(/[^A-Za-z0-9._-]/g, '__'));
}

/** Reads the files from the configured folder, the cache, or (once) the hub. Throws TokenizerUnavailableError naming both options. */
export async function loadTokenizerFiles(source: TokenizerSource): Promise<TokenizerFiles> {
  if (source.tokenizerPath.trim() !== '') {
    const folder = source.tokenizerPath;
    const missing = missingFiles(folder);
    if (missing.length > 0) {
      throw new TokenizerUnavailableError(
        `rl.tokenizer_path is ${folder}, but ${missing.join(' and ')} ${missing.length > 1 ? 'are' : 'is'} not there. ` +
          `Point rl.tokenizer_path at a folder holding the base model's ${TOKENIZER_FILE} and ${TOKENIZER_CONFIG_FILE}, ` +
          `or leave it empty to use the cache folder ${cacheHint(source)}.`,
      );
    }
    return readTokenizerFolder(folder);
  }
  if (source.model.trim() === '') {
    throw new TokenizerUnavailableError(
      `No tokenizer for the RL policy: neither rl.tokenizer_path nor rl.model is set. Set rl.tokenizer_path to a folder holding ` +
        `${TOKENIZER_FILE} and ${TOKENIZER_CONFIG_FILE}, or set rl.model to the base model's Hugging Face id.`,
    );
  }
  const cache = tokenizerCacheDir(source.home, source.model);
  if (missingFiles(cache).length === 0) return readTokenizerFolder(cache);
  try {
    await downloadTokenizer(source, cache);
  } catch (error) {
    throw new TokenizerUnavailableError(
      `No tokenizer for ${source.model}: rl.tokenizer_path is not set, ${cache} does not hold ${TOKENIZER_FILE} and ${TOKENIZER_CONFIG_FILE}, ` +
        `and downloading them from the Hugging Face hub failed (${errorMessage(error)}). Either set rl.tokenizer_path to a folder ` +
        `with those two files, or copy them into ${cache}.`,
      { cause: error },
    );
  }
  return readTokenizerFolder(cache);
}

/** Reads and checks a folder's files; any malformed file is a TokenizerUnavailableError naming it. */
export function readTokenizerFolder(folder: string): TokenizerFiles {
  const tokenizer = readJsonFile(join(folder, TOKENIZER_FILE), tokenizerJsonSchema);
  const config = readJsonFile(join(folder, TOKENIZER_CONFIG_FILE), tokenizerConfigSchema);
  const generationFile = join(folder, GENERATION_CONFIG_FILE);
  const eos = existsSync(generationFile) ? readJsonFile(generationFile, generationConfigSchema).eos_token_id : undefined;
  return {
    folder,
    tokenizer,
    config,
    chatTemplate: chatTemplateOf(folder, config),
    generationEosIds: eos === undefined ? [] : Array.isArray(eos) ? eos : [eos],
  };
}

function chatTemplateOf(folder: string, config: TokenizerConfig): string {
  const template = config.chat_template;
  if (typeof template === 'string') return template;
  if (Array.isArray(template)) {
    const chosen = template.find((entry) => entry.name === 'default') ?? template[0];
    if (chosen !== undefined) return chosen.template;
  }
  const separate = join(folder, CHAT_TEMPLATE_FILE);
  if (existsSync(separate)) return readFileSync(separate, 'utf8');
  throw new TokenizerUnavailableError(`${join(folder, TOKENIZER_CONFIG_FILE)} has no chat_template, and there is no ${CHAT_TEMPLATE_FILE} beside it.`);
}

function readJsonFile<T>(path: string, schema: z.ZodType<T>): T {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(path, 'utf8')) as unknown;
  } catch (error) {
    throw new TokenizerUnavailableError(`Cannot read ${path}: ${errorMessage(error)}`, { cause: error });
  }
  const result = schema.safeParse(parsed);
  if (!result.success) {
    const issue = result.error.issues[0];
    throw new TokenizerUnavailableError(`${path} is not a tokenizer file of the expected shape: ${issue?.path.join('.') || '(top level)'}: ${issue?.message}`);
  }
  return result.data;
}

function missingFiles(folder: string): string[] {
  return [TOKENIZER_FILE, TOKENIZER_CONFIG_FILE].filter((name) => !existsSync(join(folder, name))).map((name) => join(folder, name));
}

function cacheHint(source: TokenizerSource): string {
  return source.model.trim() === '' ? join(source.home, 'tokenizers', '<model>') : tokenizerCacheDir(source.home, source.model);
}

/** Fetches the files from `<hub>/<model>/resolve/main/`; written only once all required ones arrived and parsed. */
async function downloadTokenizer(source: TokenizerSource, cache: string): Promise<void> {
  const hub = (source.hubUrl ?? process.env['HF_ENDPOINT'] ?? 'https://huggingface.co').replace(/\/+$/, '');
  const token = source.hubToken ?? process.env['HF_TOKEN'];
  const doFetch = source.fetch ?? fetch;
  const get = async (name: string, required: boolean): Promise<string | undefined> => {
    const url = `${hub}/${source.model}/resolve/main/${name}`;
    const response = await doFetch(url, {
      headers: token ? { authorization: `Bearer ${token}` } : {},
      signal: AbortSignal.timeout(source.downloadTimeoutMs ?? 60_000),
    });
    if (!response.ok) {
      await response.body?.cancel();
      if (!required && response.status === 404) return undefined;
      throw new Error(`GET ${url} answered ${response.status}`);
    }
    return response.text();
  };
  const files = new Map<string, string>();
  for (const [name, required] of [
    [TOKENIZER_FILE, true],
    [TOKENIZER_CONFIG_FILE, true],
    [CHAT_TEMPLATE_FILE, false],
    [GENERATION_CONFIG_FILE, false],
  ] as const) {
    const text = await get(name, required);
    if (text !== undefined) files.set(name, text);
  }
  for (const [name, schema] of [
    [TOKENIZER_FILE, tokenizerJsonSchema],
    [TOKENIZER_CONFIG_FILE, tokenizerConfigSchema],
  ] as const) {
    const check = schema.safeParse(parseJson(files.get(name) ?? ''));
    if (!check.success) throw new Error(`the hub's ${name} is not a tokenizer file of the expected shape`);
  }
  // The two required files last, so a half-finished download never looks complete.
  const order = [CHAT_TEMPLATE_FILE, GENERATION_CONFIG_FILE, TOKENIZER_FILE, TOKENIZER_CONFIG_FILE];
  for (const name of order) {
    const text = files.get(name);
    if (text !== undefined) writeFileAtomic(join(cache, name), text);
  }
}
