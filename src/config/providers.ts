import type { WireFormat } from './upstreams.js';

/** Provider presets offered by `metaclaw setup`: where the API is and a sensible default model. */
export interface ProviderPreset {
  id: string;
  label: string;
  apiBase: string;
  format: WireFormat;
  /** A sensible default (setup checks it against the provider's model list); empty only for custom. */
  model: string;
  /** Where people usually keep the key. */
  keyEnv: string;
  /** Local servers need no key. */
  needsKey: boolean;
  /** The provider's embeddings model on its OpenAI-compatible /embeddings endpoint, where it has one (probed at setup and start). */
  embeddingModel?: string;
}

export const PROVIDER_PRESETS: readonly ProviderPreset[] = [
  {
    id: 'openai',
    label: 'OpenAI',
    apiBase: 'https://api.openai.com/v1',
    format: 'openai',
    model: 'gpt-4o',
    keyEnv: 'OPENAI_API_KEY',
    needsKey: true,
    embeddingModel: 'text-embedding-3-small',
  },
  {
    id: 'anthropic',
    label: 'Anthropic',
    apiBase: 'https://api.anthropic.com',
    format: 'anthropic',
    model: 'claude-sonnet-4-6',
    keyEnv: 'ANTHROPIC_API_KEY',
    needsKey: true,
  },
  {
    id: 'kimi',
    label: 'Kimi (Moonshot)',
    apiBase: 'https://api.moonshot.cn/v1',
    format: 'openai',
    model: 'moonshotai/Kimi-K2.5',
    keyEnv: 'MOONSHOT_API_KEY',
    needsKey: true,
  },
  {
    id: 'qwen',
    label: 'Qwen (DashScope)',
    apiBase: 'https://dashscope.aliyuncs.com/compatible-mode/v1',
    format: 'openai',
    model: 'qwen-plus',
    keyEnv: 'DASHSCOPE_API_KEY',
    needsKey: true,
    embeddingModel: 'text-embedding-v3',
  },
  {
    id: 'deepseek',
    label: 'DeepSeek',
    apiBase: 'https://api.deepseek.com/v1',
    format: 'openai',
    model: 'deepseek-chat',
    keyEnv: 'DEEPSEEK_API_KEY',
    needsKey: true,
  },
  { id: 'minimax', label: 'MiniMax', apiBase: 'https://api.minimax.chat/v1', format: 'openai', model: 'MiniMax-M2', keyEnv: 'MINIMAX_API_KEY', needsKey: true },
  {
    id: 'novita',
    label: 'Novita',
    apiBase: 'https://api.novita.ai/v3/openai',
    format: 'openai',
    model: 'meta-llama/llama-3.1-8b-instruct',
    keyEnv: 'NOVITA_API_KEY',
    needsKey: true,
  },
  {
    id: 'openrouter',
    label: 'OpenRouter',
    apiBase: 'https://openrouter.ai/api/v1',
    format: 'openai',
    model: 'openai/gpt-4o',
    keyEnv: 'OPENROUTER_API_KEY',
    needsKey: true,
  },
  {
    id: 'volcengine',
    label: 'Volcengine (Doubao)',
    apiBase: 'https://ark.cn-beijing.volces.com/api/v3',
    format: 'openai',
    model: 'doubao-seed-2-0-pro-260215',
    keyEnv: 'ARK_API_KEY',
    needsKey: true,
    embeddingModel: 'doubao-embedding-text-240715',
  },
  {
    id: 'ollama',
    label: 'Ollama (local)',
    apiBase: 'http://127.0.0.1:11434/v1',
    format: 'openai',
    model: 'llama3.1',
    keyEnv: '',
    needsKey: false,
    embeddingModel: 'nomic-embed-text',
  },
  { id: 'custom', label: 'Another OpenAI- or Anthropic-compatible API', apiBase: '', format: 'openai', model: '', keyEnv: '', needsKey: true },
];

export function presetFor(id: string): ProviderPreset | undefined {
  return PROVIDER_PRESETS.find((preset) => preset.id === id);
}
