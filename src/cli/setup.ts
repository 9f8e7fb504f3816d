import * as prompts from '@clack/prompts';
import { ALL_CLAW_TYPES, detectClaws, isClawType, type ClawType } from '../claws/index.js';
import { detectFormat, MODES, PROVIDER_PRESETS, presetFor, updateConfigFile, writeConfigSchema, type LoadedConfig } from '../config/index.js';
import { ConfigError } from '../errors.js';
import { silentLogger } from '../logging/index.js';
import { probeProviderEmbeddings, retrievalModes, saveProbe } from '../runtime/index.js';
import { embedsMemory, memorySettings, skillsSettings } from '../runtime/settings.js';
import { installStarterSkills, SkillsService } from '../skills/index.js';
import { openDatabase } from '../store/index.js';
import { decideMode } from '../rl/index.js';
import { probeUpstream } from '../upstream/index.js';
import { CliExit, loadCliConfig, print } from './context.js';
import { terminalText } from './terminal-text.js';
import { clawEnvironment, clawName } from './wiring.js';
import { counted } from './plural.js';

export interface SetupOptions {
  config?: string;
  mode?: string;
  provider?: string;
  apiBase?: string;
  model?: string;
  apiKeyEnv?: string;
  apiFormat?: string;
  claw?: string;
  port?: string;
  yes?: boolean;
  starterSkills?: boolean;
  memory?: boolean;
  verify?: boolean;
}

interface Answers {
  mode: string;
  provider: string;
  apiBase: string;
  format: 'openai' | 'anthropic';
  model: string;
  apiKey: string | undefined;
  claw: ClawType;
  port: number;
  starterSkills: boolean;
  memory: boolean;
}

/**
 * `metaclaw setup`: asks a few questions (or takes flags), checks the answers against the real API,
 * and writes the config — updating an existing file, keeping sections it did not ask about. Keys
 * come from an environment variable or a hidden prompt, never from the command line.
 */
export async function setupCommand(options: SetupOptions): Promise<void> {
  const config = loadCliConfig(options.config ? { config: options.config } : {});
  const interactive = !options.yes && process.stdin.isTTY === true && process.stdout.isTTY === true;
  const answers = interactive ? await ask(config, options) : fromFlags(config, options);

  if (options.verify !== false) {
    const spinner = interactive ? prompts.spinner() : undefined;
    spinner?.start(`Checking ${answers.apiBase}`);
    const probe = await probeUpstream({ baseUrl: answers.apiBase, format: answers.format, apiKey: answers.apiKey, model: answers.model || undefined });
    spinner?.stop(probe.ok ? terminalText(`OK: ${probe.detail}`) : 'The check failed');
    if (!probe.ok)
      throw new CliExit(
        `Setup stopped, nothing was written: ${probe.detail}.\nFix the base URL, model or key (for a key, export it and pass --api-key-env VAR), or use --no-verify to write the config anyway.`,
      );
    if (!interactive) print(`Checked the upstream: ${probe.detail}.`);
  } else if (!interactive) print('Skipped checking the upstream (--no-verify).');

  const updates: Record<string, unknown> = {
    mode: answers.mode,
    'llm.provider': answers.provider,
    'llm.api_base': answers.apiBase,
    'llm.api_format': answers.format,
    'llm.model_id': answers.model,
    'llm.auth_method': answers.apiKey ? 'api_key' : 'passthrough',
    'proxy.port': answers.port,
    claw_type: answers.claw,
    'memory.enabled': answers.memory,
  };
  if (answers.apiKey) updates['llm.api_key'] = answers.apiKey;
  try {
    updateConfigFile(config.file, updates, { schemaFile: writeConfigSchema(config.home) });
  } catch (error) {
    if (error instanceof ConfigError) throw new CliExit(error.message);
    throw error;
  }
  print(`Wrote ${config.file} (mode 0600; other settings kept).`);

  const updated = loadCliConfig(options.config ? { config: options.config } : {});
  // A node of a team serves the team store's shared library, not this install's folder: adding to it is the team's call.
  if (answers.starterSkills && updated.values['store.url'])
    print(
      'Starter skills: not installed here. A team store is configured, whose skill library every node shares; `metaclaw skills install-starter` adds them to it.',
    );
  else if (answers.starterSkills) {
    const db = openDatabase(updated.paths.database);
    try {
      const service = new SkillsService({
        db,
        logger: silentLogger(),
        settings: { ...skillsSettings(updated), embedding: { apiBase: '', apiKey: '', model: '' } },
      });
      service.open({ watch: false });
      const report = installStarterSkills(service);
      print(
        report.imported.length > 0
          ? `Installed ${counted(report.imported.length, 'starter skill')} in ${updated.paths.skillsDir}.`
          : 'Starter skills already installed.',
      );
    } finally {
      db.close();
    }
  }

  if (options.verify !== false) await probeEmbeddingsAtSetup(options);
  trainingKeyHint(options);

  const next =
    answers.claw === 'none'
      ? 'Point your agent at http://127.0.0.1:' + answers.port + '/v1 (OpenAI) or http://127.0.0.1:' + answers.port + ' (Anthropic).'
      : `\`metaclaw start\` will wire ${clawName(answers.claw)} to the proxy; \`metaclaw stop --unwire\` puts it back exactly.`;
  if (interactive) prompts.outro(`Done. Run \`metaclaw start\`. ${next}`);
  else print(`Done. Run \`metaclaw start\`. ${next}`);
}

/** Modes rl and auto without a training key run as skills_only: say what to set, now rather than at the first start. */
function trainingKeyHint(options: SetupOptions): void {
  const config = loadCliConfig(options.config ? { config: options.config } : {});
  const mode = decideMode(config.values, process.env);
  if (mode.configured === 'skills_only' || mode.backend) return;
  print(
    `Mode ${mode.configured} trains on Tinker or MinT and needs its key: \`metaclaw config set rl.api_key KEY\` (or export TINKER_API_KEY / MINT_API_KEY before \`metaclaw start\`), and the base model as rl.model (e.g. Qwen/Qwen3-8B). Until then it runs as skills_only.`,
  );
}

/**
 * Probes the provider's embeddings endpoint and stores what it found: the first start uses hybrid
 * retrieval when it answered. Not on a node of a team: a node never reads that probe (it is kept
 * in the install's own database) and never probes; it embeds memory with memory.embedding.* alone.
 */
async function probeEmbeddingsAtSetup(options: SetupOptions): Promise<void> {
  const config = loadCliConfig(options.config ? { config: options.config } : {});
  if (config.values['store.url']) return print(terminalText(teamEmbeddingsLine(config)));
  const probe = await probeProviderEmbeddings(config, process.env, 'setup');
  const db = openDatabase(config.paths.database);
  try {
    saveProbe(db, probe);
  } finally {
    db.close();
  }
  const { skills, memory } = retrievalModes(config, process.env, probe);
  print(terminalText(`Retrieval: skills ${skills.mode}, memory ${memory.mode} (${skills.reason}).`));
}

/** What setup says instead of probing on a node of a team: where the node's memory vectors come from. */
function teamEmbeddingsLine(config: LoadedConfig): string {
  const memory = memorySettings(config);
  const head = "Embeddings: not probed. A team store is configured, and its nodes use memory.embedding.* rather than the provider's endpoint";
  if (embedsMemory(memory))
    return `${head}: they embed memory with ${memory.embedding.model} at ${memory.embedding.apiBase} when the store has pgvector (\`metaclaw doctor\` says whether it does).`;
  return `${head}; memory.embedding.api_base and memory.embedding.model are not both set here (or memory is off, or memory.retrieval_mode is keyword), so recall is by keyword: set both for vectors.`;
}

function fromFlags(config: LoadedConfig, options: SetupOptions): Answers {
  const values = config.values;
  const provider = options.provider ?? (values['llm.provider'] !== 'custom' || values['llm.api_base'] ? values['llm.provider'] : 'openai');
  const preset = presetFor(provider);
  if (!preset) throw new CliExit(`Unknown provider "${provider}"; choose one of ${PROVIDER_PRESETS.map((item) => item.id).join(', ')}.`);
  const apiBase = options.apiBase ?? (options.provider ? preset.apiBase : values['llm.api_base'] || preset.apiBase);
  if (!apiBase) throw new CliExit('The custom provider needs --api-base URL (an OpenAI-compatible base ending in /v1, or an Anthropic base).');
  if (!/^https?:\/\/\S+$/i.test(apiBase)) throw new CliExit(`--api-base must be an http(s) URL, got "${apiBase}".`);
  const model = options.model ?? (options.provider ? preset.model : values['llm.model_id'] || preset.model);
  if (!model) throw new CliExit(`The ${preset.id} provider (${preset.label}) has no default model: pass --model NAME.`);
  const apiKey = readKey(options, preset.keyEnv, values['llm.api_key'] || undefined, preset.needsKey);
  const mode = options.mode ?? values['mode'];
  if (!(MODES as readonly string[]).includes(mode) && mode !== 'madmax') throw new CliExit(`--mode must be one of ${MODES.join(', ')}.`);
  if (options.apiFormat && options.apiFormat !== 'openai' && options.apiFormat !== 'anthropic') throw new CliExit('--api-format must be openai or anthropic.');
  const claw = options.claw ?? values['claw_type'];
  if (!isClawType(claw)) throw new CliExit(`--claw must be one of ${ALL_CLAW_TYPES.join(', ')}; got "${claw}".`);
  const port = options.port === undefined ? values['proxy.port'] : Number(options.port);
  if (!Number.isInteger(port) || port < 1 || port > 65535) throw new CliExit(`--port must be an integer from 1 to 65535, got "${options.port}".`);
  return {
    mode: mode === 'madmax' ? 'auto' : mode,
    provider: preset.id,
    ...endpointAnswers(options, preset.id, apiBase),
    model,
    apiKey,
    claw,
    port,
    starterSkills: options.starterSkills ?? true,
    memory: options.memory ?? values['memory.enabled'],
  };
}

/** The key: from the named environment variable (never a command-line value), else the one already configured. */
/** The base URL without trailing slashes, and its wire format (as given, or detected from the URL). */
function endpointAnswers(options: SetupOptions, presetId: string, apiBase: string): Pick<Answers, 'apiBase' | 'format'> {
  return {
    apiBase: apiBase.replace(/\/+$/, ''),
    format: detectFormat(options.apiFormat ?? (presetId === 'anthropic' ? 'anthropic' : 'auto'), apiBase, presetId),
  };
}

function readKey(options: SetupOptions, presetEnv: string, configured: string | undefined, needsKey: boolean): string | undefined {
  if (options.apiKeyEnv) {
    const value = process.env[options.apiKeyEnv]?.trim();
    if (!value) throw new CliExit(`--api-key-env ${options.apiKeyEnv}: that environment variable is empty or not set.`);
    return value;
  }
  if (configured) return configured;
  const fromPreset = presetEnv ? process.env[presetEnv]?.trim() : undefined;
  if (fromPreset) return fromPreset;
  if (needsKey) print("No API key given (--api-key-env VAR): the proxy will pass your agent's own key through to the upstream.");
  return undefined;
}

async function ask(config: LoadedConfig, options: SetupOptions): Promise<Answers> {
  const values = config.values;
  prompts.intro('MetaClaw setup');
  const cancelled = () => {
    prompts.cancel('Setup cancelled; nothing was written.');
    throw new CliExit('', 1);
  };
  const check = <T>(value: T): Exclude<T, symbol> => {
    if (prompts.isCancel(value)) cancelled();
    return value as Exclude<T, symbol>;
  };
  const mode =
    options.mode ??
    check(
      await prompts.select({
        message: 'How should MetaClaw learn?',
        initialValue: values['mode'],
        options: [
          { value: 'skills_only', label: 'skills_only', hint: 'skills and memory through your own API (no GPU, no training)' },
          { value: 'rl', label: 'rl', hint: 'also serve from and train a LoRA policy on Tinker or MinT (needs a training key)' },
          { value: 'auto', label: 'auto', hint: 'rl, training only in idle windows (sleep hours, keyboard idle, meetings)' },
        ],
      }),
    );
  const provider =
    options.provider ??
    check(
      await prompts.select({
        message: 'Which LLM provider?',
        initialValue: values['llm.provider'] === 'custom' && !values['llm.api_base'] ? 'openai' : values['llm.provider'],
        options: PROVIDER_PRESETS.map((preset) => ({ value: preset.id, label: preset.label, ...(preset.apiBase ? { hint: preset.apiBase } : {}) })),
      }),
    );
  const preset = presetFor(provider)!;
  const apiBase =
    options.apiBase ??
    (preset.id === 'custom'
      ? check(
          await prompts.text({
            message: 'Base URL of the API',
            placeholder: 'https://example.com/v1',
            initialValue: values['llm.api_base'],
            validate: (text) => (/^https?:\/\/\S+$/i.test(text ?? '') ? undefined : 'an http(s) URL'),
          }),
        )
      : preset.apiBase);
  const model =
    options.model ??
    check(
      await prompts.text({
        message: 'Model',
        initialValue: values['llm.model_id'] || preset.model,
        validate: (text) => (text && text.trim() ? undefined : 'a model name'),
      }),
    );
  let apiKey: string | undefined;
  if (options.apiKeyEnv) apiKey = readKey(options, preset.keyEnv, undefined, preset.needsKey);
  else if (preset.needsKey) {
    const envValue = preset.keyEnv ? process.env[preset.keyEnv]?.trim() : undefined;
    const source = check(
      await prompts.select({
        message: 'API key',
        options: [
          ...(envValue ? [{ value: 'env', label: `use $${preset.keyEnv}` }] : []),
          ...(values['llm.api_key'] ? [{ value: 'keep', label: 'keep the configured key' }] : []),
          { value: 'enter', label: 'type it (hidden)' },
          { value: 'passthrough', label: "none: pass my agent's own key through" },
        ],
      }),
    );
    if (source === 'env') apiKey = envValue;
    else if (source === 'keep') apiKey = values['llm.api_key'];
    else if (source === 'enter')
      apiKey = check(await prompts.password({ message: 'API key', validate: (text) => (text && text.trim() ? undefined : 'the key') })).trim();
  }
  const detected = (await detectClaws(clawEnvironment(config))).filter((item) => item.installed);
  const claw = (options.claw ??
    check(
      await prompts.select({
        message: 'Which agent should MetaClaw wire to the proxy?',
        initialValue: detected[0]?.type ?? values['claw_type'],
        options: [
          ...detected.map((item) => ({ value: item.type, label: item.name, hint: item.configPath ?? 'detected' })),
          ...ALL_CLAW_TYPES.filter((type) => type !== 'none' && !detected.some((item) => item.type === type)).map((type) => ({
            value: type,
            label: clawName(type),
            hint: 'not detected',
          })),
          { value: 'none', label: 'none', hint: 'I will point my agent at the proxy myself' },
        ],
      }),
    )) as ClawType;
  const portText =
    options.port ??
    check(
      await prompts.text({
        message: 'Proxy port',
        initialValue: String(values['proxy.port']),
        validate: (text) => (/^\d+$/.test(text ?? '') && Number(text) > 0 && Number(text) < 65536 ? undefined : 'a port number'),
      }),
    );
  const starterSkills =
    options.starterSkills ??
    check(await prompts.confirm({ message: 'Install the starter skills (42 playbooks for coding, debugging, research, …)?', initialValue: true }));
  const memory =
    options.memory ?? check(await prompts.confirm({ message: 'Keep long-term memory of your conversations?', initialValue: values['memory.enabled'] }));
  return { mode, provider: preset.id, ...endpointAnswers(options, preset.id, apiBase), model, apiKey, claw, port: Number(portText), starterSkills, memory };
}
