import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { runCli, startProxy, tempHome } from './support/proxy.js';

/**
 * Commander hands every option value over as text. A count, an id or a number of seconds that is
 * not one must be a clear error that changes nothing — never a stack trace, a silent "nothing
 * found", a SQL error, or a NaN that turns into "no limit" or "no wait".
 */
describe('number options of the CLI', () => {
  test('a limit, an importance, a version, a proposal or job id or a number of days that is not a number is refused by name and exits 1', async () => {
    const home = tempHome();
    const added = await runCli(['memory', 'add', 'Deploys happen on Tuesdays.', '--json'], { home });
    assert.equal(added.code, 0, added.stderr);
    const id = JSON.parse(added.stdout).id as string;

    const cases: Array<[string[], RegExp]> = [
      [['sessions', 'list', '--limit', 'abc'], /--limit/],
      [['sessions', 'list', '--limit', '-5'], /--limit/],
      [['memory', 'search', 'deploys', '--limit', 'abc'], /--limit/],
      [['memory', 'search', 'deploys', '--limit', '0'], /--limit/],
      [['memory', 'add', 'Tests run nightly.', '--importance', 'abc'], /--importance/],
      [['memory', 'add', 'Tests run nightly.', '--importance', '5'], /--importance/],
      [['memory', 'edit', id, '--importance', 'high'], /--importance/],
      [['skills', 'log', '-n', 'abc'], /-n/],
      [['skills', 'approve', 'first'], /proposal id/],
      [['skills', 'reject', '1.5'], /proposal id/],
      [['skills', 'revert', 'some-skill', '--to', 'latest'], /--to/],
      [['skills', 'diff', 'some-skill', '--from', 'x'], /--from/],
      [['skills', 'prune', '--dry-run', '--unused-days', 'abc'], /--unused-days/],
      [['start', '--wait', 'soon'], /--wait/],
      [['jobs', 'list', '--limit', 'abc'], /--limit/],
      [['jobs', 'list', '--limit', '5000'], /--limit/],
      [['jobs', 'retry', 'first'], /"first" is not a job id/],
      [['jobs', 'retry', '0'], /"0" is not a job id/],
    ];
    for (const [args, message] of cases) {
      const result = await runCli(args, { home });
      const shown = `metaclaw ${args.join(' ')}:\n${result.stdout}\n${result.stderr}`;
      assert.equal(result.code, 1, shown);
      assert.match(result.stderr, message, shown);
      assert.doesNotMatch(result.stderr, /\n\s+at |SQLITE|NaN|constraint/, shown);
    }

    const after = JSON.parse((await runCli(['memory', 'show', id, '--json'], { home })).stdout);
    assert.equal(after.importance, 0.8, 'a refused edit changes nothing');
    const stats = await runCli(['memory', 'stats'], { home });
    assert.match(stats.stdout, /scope default: 1 active/, 'a refused add stores nothing');
    assert.equal((await runCli(['status'], { home })).code, 1, 'a refused start starts nothing');
  });

  test('stop --timeout that is not a number is refused and leaves the proxy running (no SIGKILL at once)', async () => {
    const proxy = await startProxy();
    try {
      const refused = await proxy.cli(['stop', '--timeout', 'abc']);
      assert.equal(refused.code, 1, refused.stdout + refused.stderr);
      assert.match(refused.stderr, /--timeout/);
      assert.doesNotMatch(refused.stdout, /killed/);
      assert.equal((await fetch(`${proxy.url}/healthz`)).status, 200, 'the proxy still runs');
    } finally {
      await proxy.dispose();
    }
  });
});
