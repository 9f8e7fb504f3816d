import assert from 'node:assert/strict';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { freePort, REPO, runCli, startProxy, tempHome } from './support/proxy.js';

const homes: string[] = [];
after(() => {
  for (const folder of homes) rmSync(folder, { recursive: true, force: true });
});
function newHome(): string {
  const folder = tempHome('metaclaw-schema-');
  homes.push(folder);
  return folder;
}

/** The example config.yaml of README's Configuration section. */
function readmeExample(): unknown {
  const readme = readFileSync(join(REPO, 'README.md'), 'utf8');
  const section = readme.slice(readme.indexOf('## Configuration'));
  const block = [...section.matchAll(/```yaml\n([\s\S]*?)```/g)].find((match) => match[1]!.includes('llm:'));
  assert.ok(block, 'README has an example config.yaml');
  return parseYaml(block[1]!);
}

async function printedSchema(home: string): Promise<Record<string, any>> {
  const result = await runCli(['config', 'schema'], { home });
  assert.equal(result.code, 0, result.stderr);
  return JSON.parse(result.stdout) as Record<string, any>;
}

describe('the JSON Schema of config.yaml', () => {
  test('`metaclaw config schema` prints a JSON Schema that accepts README’s example config and rejects a wrong type or an unknown key', async () => {
    const schema = await printedSchema(newHome());
    assert.equal(schema['$schema'], 'http://json-schema.org/draft-07/schema#');
    const validator = z.fromJSONSchema(schema);
    const example = readmeExample() as Record<string, any>;
    const accepted = validator.safeParse(example);
    assert.ok(accepted.success, `README's example is valid: ${accepted.error?.message}`);

    assert.equal(validator.safeParse({ ...example, proxy: { ...example['proxy'], port: 'thirty thousand' } }).success, false, 'a port must be an integer');
    assert.equal(validator.safeParse({ ...example, proxy: { ...example['proxy'], port: 70_000 } }).success, false, 'a port is at most 65535');
    assert.equal(validator.safeParse({ ...example, llm: { ...example['llm'], api_format: 'grpc' } }).success, false, 'enums list their values');
    assert.equal(validator.safeParse({ ...example, proxy: { ...example['proxy'], prot: 4000 } }).success, false, 'an unknown key is flagged');
    assert.ok(
      validator.safeParse({ mode: 'madmax', configure_openclaw: false, rl: { tinker_api_key: 'k' } }).success,
      "MetaClaw's legacy keys and values load",
    );

    const port = schema['properties'].proxy.properties.port;
    assert.deepEqual(port, { type: 'integer', minimum: 1, maximum: 65535, description: 'Port to listen on.', default: 30000 });
    assert.deepEqual(schema['properties'].llm.properties.api_format.enum, ['auto', 'openai', 'anthropic', 'openai-responses']);
    assert.match(schema['properties'].memory.properties.policy_path.description, /No effect in MetaClaw-TS/);

    const keys = JSON.parse((await runCli(['config', 'keys', '--json'], { home: newHome() })).stdout) as Array<{ key: string; default: unknown }>;
    for (const { key } of keys) {
      const path = key.split('.');
      let node = schema;
      for (const part of path) node = node['properties']?.[part];
      assert.ok(node, `${key} is in the schema`);
      assert.equal(typeof node['description'], 'string', `${key} has its doc`);
    }
  });

  test('`metaclaw setup` and `config set` write config.schema.json and start a new config.yaml with the yaml-language-server line; an existing file keeps its own first lines', async () => {
    const home = newHome();
    const result = await runCli(['setup', '--yes', '--no-verify', '--provider', 'openai', '--claw', 'none', '--port', String(await freePort())], { home });
    assert.equal(result.code, 0, result.stderr);
    const text = readFileSync(join(home, 'config.yaml'), 'utf8');
    assert.equal(text.split('\n')[0], '# yaml-language-server: $schema=./config.schema.json');
    const written = JSON.parse(readFileSync(join(home, 'config.schema.json'), 'utf8')) as Record<string, unknown>;
    assert.deepEqual(written, await printedSchema(home), 'the file holds what `config schema` prints');
    const check = z.fromJSONSchema(written).safeParse(parseYaml(text));
    assert.ok(check.success, `the config setup wrote is valid: ${check.error?.message}`);

    const viaSet = newHome();
    assert.equal((await runCli(['config', 'set', 'proxy.port', '4100'], { home: viaSet })).code, 0);
    assert.equal(readFileSync(join(viaSet, 'config.yaml'), 'utf8'), '# yaml-language-server: $schema=./config.schema.json\n\nproxy:\n  port: 4100\n');
    assert.ok(existsSync(join(viaSet, 'config.schema.json')), '`config set` writes the schema it points at');

    const existing = newHome();
    const original = '# my notes come first\nproxy:\n  port: 4000 # mine\n';
    writeFileSync(join(existing, 'config.yaml'), original, { mode: 0o600 });
    const again = await runCli(['setup', '--yes', '--no-verify', '--provider', 'openai', '--claw', 'none', '--port', '4000'], { home: existing });
    assert.equal(again.code, 0, again.stderr);
    const kept = readFileSync(join(existing, 'config.yaml'), 'utf8');
    assert.ok(kept.startsWith('# my notes come first\n'), kept);
    assert.doesNotMatch(kept, /yaml-language-server/);
    assert.match(kept, /port: 4000 # mine/);
  });

  test('`metaclaw start` brings a stale config.schema.json up to date with the installed keys', async () => {
    const home = newHome();
    writeFileSync(join(home, 'config.schema.json'), '{"title": "from an older version"}\n');
    const proxy = await startProxy({ home, config: {} });
    try {
      const written = JSON.parse(readFileSync(join(home, 'config.schema.json'), 'utf8')) as Record<string, unknown>;
      assert.deepEqual(written, await printedSchema(home));
    } finally {
      await proxy.dispose();
    }
  });
});
