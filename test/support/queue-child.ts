/**
 * A separate process that runs the real learning queue and runner on a database, with a test job
 * kind. `hang` leases a job and never finishes it (so the parent can SIGKILL it mid-job);
 * `complete` finishes whatever it leases.
 */
import { JobQueue, LearningBudget, LearningRunner } from '../../src/learning/index.js';
import { silentLogger } from '../../src/logging/index.js';
import { openDatabase } from '../../src/store/index.js';

const [databasePath, mode, action] = process.argv.slice(2) as [string, 'hang' | 'complete', string | undefined];
const db = openDatabase(databasePath);
const queue = new JobQueue(db, `child-${process.pid}`, 5);
const runner = new LearningRunner(queue, new LearningBudget(db, 0), silentLogger(), { concurrency: 1, pollMs: 50 });
runner.register({
  kind: 'test.work',
  usesLlm: false,
  async run(payload, context) {
    process.stdout.write(`${JSON.stringify({ event: 'started', job: context.job.id, attempt: context.job.attempts, payload })}\n`);
    if (mode === 'hang') await new Promise(() => undefined);
    process.stdout.write(`${JSON.stringify({ event: 'finished', job: context.job.id })}\n`);
  },
});
if (action === 'enqueue') queue.enqueue('test.work', { note: 'survives crashes' });
runner.start();
setInterval(() => undefined, 1_000);
