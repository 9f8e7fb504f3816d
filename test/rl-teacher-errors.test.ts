import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { PermanentJobError } from '../src/learning/index.js';
import { teacherLogprobs } from '../src/rl/teacher/index.js';
import { json, ScriptedUpstream } from './support/upstream.js';

const KEY = 'teacher-key-0123456789';

describe("the OPD teacher's refusals", () => {
  let teacher: ScriptedUpstream;
  before(async () => {
    teacher = await ScriptedUpstream.start();
    // As some servers do: the refused key is echoed in the error's words.
    teacher.defaultHandler = (request, response) =>
      json(response, 401, { error: { message: `Incorrect API key provided: ${String(request.headers['authorization']).replace('Bearer ', '')}` } });
  });
  after(() => teacher.close());

  test('a refusal that echoes the key is a permanent job error whose words (logged, stored with the job) do not hold the key', async () => {
    await assert.rejects(teacherLogprobs({ baseUrl: `${teacher.url}/v1`, model: 'teacher', apiKey: KEY }, [1, 2], [3]), (error: unknown) => {
      assert.ok(error instanceof PermanentJobError, String(error));
      assert.match(error.message, /answered 401: .*Incorrect API key provided: \[redacted\]/);
      assert.doesNotMatch(error.message, new RegExp(KEY));
      return true;
    });
  });
});
