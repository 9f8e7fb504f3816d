import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ClawError } from '../src/claws/index.js';
import { CliExit } from '../src/cli/context.js';
import { BadRequestError, ConfigError, InternalError, MemoryError, MetaclawError, RequestError, SkillError, StoreError, UpstreamError } from '../src/errors.js';
import { InvalidLlmOutputError, LearningError, LearningMisconfiguredError, LlmCallError, PermanentJobError } from '../src/learning/index.js';

describe('one error hierarchy', () => {
  test('every error MetaClaw raises on purpose is a MetaclawError with a stable code and its own name', () => {
    const errors: MetaclawError[] = [
      new BadRequestError('invalid_json', 'bad'),
      new ConfigError('bad key'),
      new ClawError('not_installed', 'no openclaw'),
      new CliExit('bye', 2),
      new PermanentJobError('never'),
      new LearningMisconfiguredError('no key'),
      new LlmCallError('down', 503),
      new InvalidLlmOutputError('no json', 10),
      new SkillError('no such proposal'),
      new MemoryError('not stored'),
      new StoreError('part missing'),
      new UpstreamError('odd answer'),
      new InternalError('a bug'),
    ];
    for (const error of errors) {
      assert.ok(error instanceof MetaclawError, `${error.constructor.name} extends MetaclawError`);
      assert.match(error.code, /^[a-z_]+$/, `${error.constructor.name} has a code`);
      assert.equal(error.name, error.constructor.name);
    }
    assert.ok(errors[0] instanceof RequestError && errors[0].status === 400);
    assert.equal((errors[3] as CliExit).exitCode, 2);
    assert.equal((errors[4] as LearningError).retryable, false);
    assert.equal((errors[5] as LearningError).retryable, true);
  });
});
