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
