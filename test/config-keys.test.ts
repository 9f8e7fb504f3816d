import assert from 'node:assert/strict';
import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { after, describe, test } from 'node:test';
import { KEY_DEFINITIONS, loadConfig } from '../src/config/index.js';
import { freePort, REPO, runCli, tempHome } from './support/proxy.js';

const homes: string[] = [];
function home(yaml?: string): string {
  const folder = tempHome('metaclaw-keys-');
  homes.push(folder);
  if (yaml !== undefined) writeFileSync(join(folder, 'config.yaml'), yaml, { mode: 0o600 });
  return folder;
}
after(() => {
  for (const folder of homes) rmSync(folder, { recursive: true, force: true });
});

/** Every TypeScript file under src/, but the schema (which declares keys) and effect.ts (which reads them only to warn). */
function runtimeSources(): string {
  const files: string[] = [];
  const walk = (folder: string) => {
    for (const entry of readdirSync(folder, { withFileTypes: true })) {
      const path = join(folder, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith('.ts')) files.push(path);
    }
  };
  walk(join(REPO, 'src'));
  const skipped = new Set(['src/config/schema.ts', 'src/config/effect.ts']);
  return files
    .filter((path) => !skipped.has(relative(REPO, path)))
    .map((path) => readFileSync(path, 'utf8'))
    .join('\n');
}

/** Not-honoured keys the code reads only to report them, never to act. */
const REPORTED_ONLY = new Set<string>();

describe('every config key does what its doc says or warns', () => {
  test('each key is either read from the loaded values by the code, or marked compatibility-only / not built yet and then read by nothing', () => {
    const sources = runtimeSources();
    const isRead = (key: string) => sources.includes(`values['${key}']`) || sources.includes(`typed['${key}']`);
    const unread = KEY_DEFINITIONS.filter((definition) => !definition.noEffect && !isRead(definition.key)).map((definition) => definition.key);
    assert.deepEqual(
      unread,
      [],
      'these keys are documented as doing something, but no code reads them: implement them or mark them noEffect in src/config/schema.ts',
    );
    const markedButRead = KEY_DEFINITIONS.filter((definition) => definition.noEffect && isRead(definition.key) && !REPORTED_ONLY.has(definition.key)).map(
      (definition) => definition.key,
    );
    assert.deepEqual(markedButRead, [], 'these keys are marked as having no effect, but code reads them: drop the marking (and its warning)');
    for (const definition of KEY_DEFINITIONS)
      if (definition.noEffect) assert.ok(definition.noEffect.reason.length > 10, `${definition.key} says why it has no effect`);
  });

  test('a key with no effect warns, with file and line, only when set to something other than its default; the built RL, OPD and scheduler keys do not warn', () => {
    const folder = home(
      'mode: rl\nopd:\n  enabled: true\n  kl_penalty_coef: 1\nscheduler:\n  enabled: true\nmemory:\n  policy_path: /data/policy.json\nwechat:\n  enabled: true\nskills:\n  task_specific_top_k: 10\n',
    );
    const config = loadConfig({ env: { METACLAW_HOME: folder } });
    const file = join(folder, 'config.yaml');
    assert.equal(
      config.warnings.some((warning) => warning.includes(': mode ')),
      false,
      'mode acts (rl without a backend runs as skills_only, and `metaclaw start` says so)',
    );
    assert.ok(
      config.warnings.includes(`${file}: opd.enabled needs opd.teacher_url and opd.teacher_model: training runs without the teacher`),
      config.warnings.join('\n'),
    );
    assert.ok(!config.warnings.some((warning) => warning.includes('has no effect') && warning.includes('opd.')), 'OPD is built');
    assert.ok(!config.warnings.some((warning) => warning.includes('scheduler.enabled')), 'the scheduler is built: scheduler.enabled does not warn');
    assert.ok(
      config.warnings.includes(
        `${file}:8: memory.policy_path is accepted for compatibility with MetaClaw but has no effect in MetaClaw-TS (retrieval is set by the memory.* keys; there is no policy file)`,
      ),
    );
    assert.ok(
      config.warnings.includes(
        `${file}:10: wechat.enabled is accepted for compatibility with MetaClaw but has no effect in MetaClaw-TS (there is no WeChat bridge)`,
      ),
    );
    assert.equal(config.warnings.length, 3, 'keys left at their default (skills.task_specific_top_k) do not warn');
    assert.equal(config.values['opd.enabled'], true, 'the value still loads, so the file round-trips');
  });

  test('a retrieval mode that needs an embeddings endpoint warns when none is configured', () => {
    const config = loadConfig({ env: { METACLAW_HOME: home('memory:\n  retrieval_mode: embedding\nskills:\n  retrieval_mode: hybrid\n') } });
    assert.ok(
      config.warnings.some((warning) =>
        warning.endsWith(
          'memory.retrieval_mode is embedding, but memory.embedding.api_base and memory.embedding.model are not both set: memories are recalled by keywords only',
        ),
      ),
      config.warnings.join('\n'),
    );
    assert.ok(
      config.warnings.some((warning) =>
        warning.endsWith(
          'skills.retrieval_mode is hybrid, but skills.embedding.api_base and skills.embedding.model are not both set: skills are found by keywords only',
        ),
      ),
    );
    const configured = loadConfig({
      env: { METACLAW_HOME: home('memory:\n  retrieval_mode: embedding\n  embedding:\n    api_base: http://127.0.0.1:9/v1\n    model: e\n') },
    });
    assert.deepEqual(configured.warnings, []);
    // A provider with an embeddings endpoint supplies one (doctor says whether it answers).
    const preset = loadConfig({ env: { METACLAW_HOME: home('llm:\n  provider: openai\nskills:\n  retrieval_mode: hybrid\n') } });
    assert.deepEqual(preset.warnings, []);
  });

  test('metaclaw start warns on stderr, naming each ignored key, and the log records it', async () => {
    const folder = home(`proxy:\n  port: ${await freePort()}\nmemory:\n  policy_path: /data/policy.json\n  auto_upgrade_enabled: true\n`);
    const started = await runCli(['start', '--no-wire'], { home: folder });
    try {
      assert.equal(started.code, 0, started.stderr);
      assert.match(
        started.stderr,
        /warning: .*config\.yaml:4: memory\.policy_path is accepted for compatibility with MetaClaw but has no effect in MetaClaw-TS \(retrieval is set by the memory\.\* keys/,
      );
      assert.match(
        started.stderr,
        /warning: .*config\.yaml:5: memory\.auto_upgrade_enabled is accepted for compatibility with MetaClaw but has no effect in MetaClaw-TS \(MetaClaw's memory policy self-upgrade is not part of MetaClaw-TS\)/,
      );
      assert.equal(started.stderr.match(/memory\.policy_path/g)?.length, 1, 'once');
    } finally {
      await runCli(['stop'], { home: folder });
    }
    const log = readFileSync(join(folder, 'logs', 'metaclaw.log'), 'utf8');
    assert.match(log, /memory\.policy_path is accepted for compatibility with MetaClaw but has no effect/);
    assert.match(log, /memory\.auto_upgrade_enabled is accepted for compatibility/);
  });

  test('metaclaw config keys marks compatibility-only keys; config set of one warns', async () => {
    const folder = home();
    const listed = await runCli(['config', 'keys'], { home: folder });
    assert.equal(listed.code, 0, listed.stderr);
    const lineOf = (key: string) => listed.stdout.split('\n').find((line) => line.startsWith(`${key}  (`)) ?? '';
    assert.doesNotMatch(lineOf('opd.kl_penalty_coef'), /\[/, 'OPD is built');
    assert.doesNotMatch(lineOf('rl.lora_rank'), /\[/, 'RL is built');
    assert.match(lineOf('memory.policy_path'), /\[compatibility only\]$/);
    assert.doesNotMatch(lineOf('memory.store_path'), /\[/, 'it names the MetaClaw store doctor offers to import');
    assert.doesNotMatch(lineOf('max_context_tokens'), /\[/);
    assert.match(listed.stdout, /memory\.policy_path .*\n.*\n {4}No effect in MetaClaw-TS: retrieval is set by the memory\.\* keys/);

    const json = JSON.parse((await runCli(['config', 'keys', '--json'], { home: folder })).stdout) as Array<{ key: string; status: string; reason?: string }>;
    assert.equal(json.find((entry) => entry.key === 'opd.kl_penalty_coef')?.status, 'honoured');
    assert.equal(json.find((entry) => entry.key === 'rl.lora_rank')?.status, 'honoured');
    assert.equal(json.find((entry) => entry.key === 'scheduler.sleep_start')?.status, 'honoured');
    assert.equal(json.find((entry) => entry.key === 'scheduler.calendar.token_path')?.status, 'honoured');
    assert.equal(json.find((entry) => entry.key === 'scheduler.calendar.enabled')?.status, 'compatibility');
    assert.match(json.find((entry) => entry.key === 'scheduler.calendar.enabled')?.reason ?? '', /a calendar is read whenever one is configured/);
    assert.equal(json.find((entry) => entry.key === 'memory.use_embeddings')?.status, 'compatibility');
    assert.equal(json.find((entry) => entry.key === 'memory.retrieval_mode')?.status, 'honoured');

    const set = await runCli(['config', 'set', 'memory.use_embeddings', 'true'], { home: folder });
    assert.equal(set.code, 0, set.stderr);
    assert.match(set.stderr, /warning: memory\.use_embeddings is accepted for compatibility with MetaClaw but has no effect in MetaClaw-TS/);
  });
});
