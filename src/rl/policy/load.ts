import type { LoadedConfig } from '../../config/index.js';
import { resolveConfiguredPath } from '../../config/home.js';
import { ChatTokenizer } from './chat-tokenizer.js';
import { loadTokenizerFiles, type TokenizerSource } from './tokenizer-files.js';

/** One tokenizer per source for the process: building one parses the whole vocabulary. */
const loaded = new Map<string, Promise<ChatTokenizer>>();

/**
 * The base model's ChatTokenizer, loaded once (from `rl.tokenizer_path`, the cache, or the hub).
 * Call it at start, off the request path; a failed load is not remembered, so the next call retries.
 */
export function loadChatTokenizer(source: TokenizerSource): Promise<ChatTokenizer> {
  const key = JSON.stringify([source.tokenizerPath, source.model, source.home]);
  let pending = loaded.get(key);
  if (pending === undefined) {
    pending = loadTokenizerFiles(source).then((files) => ChatTokenizer.fromFiles(files));
    loaded.set(key, pending);
    pending.catch(() => loaded.delete(key));
  }
  return pending;
}

/** Where the configuration says the tokenizer is: `rl.tokenizer_path` (relative to $METACLAW_HOME), for `rl.model` or else `llm.model_id`. */
export function tokenizerSourceFromConfig(config: LoadedConfig): TokenizerSource {
  const configured = config.values['rl.tokenizer_path'];
  return {
    tokenizerPath: configured.trim() === '' ? '' : resolveConfiguredPath(config.home, configured, ''),
    model: config.values['rl.model'] || config.values['llm.model_id'],
    home: config.home,
  };
}
