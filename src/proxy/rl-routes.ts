import { z } from 'zod';
import { ConflictError, NotFoundError, PermissionError } from '../errors.js';
import type { Awaitable } from '../types/index.js';
import type { ServedPolicyRecord, StepOutcome, StepRecord, StepStore } from '../rl/loop/index.js';
import { type AdminToken } from './admin-token.js';
import { parse, readJson, wholeNumberParam } from './route-body.js';
import type { ProxyApp } from './types.js';

/** What the training routes act on: the personal engine (rl/engine.ts), or a team node's training (team/rl-training.ts). */
export interface TrainingControl {
  runStep(trigger: 'manual'): Promise<StepOutcome>;
  readonly steps: Pick<StepStore, 'recent' | 'checkpoints'>;
  readonly policy: { describe(): ServedPolicyRecord | undefined; serve(step: number, samplerPath: string, pinned: boolean): Awaitable<void> };
  /** The current run's step 0 (the weights it opened with), when kept (the personal install's run record, or the team store's). */
  runStart(): Awaitable<{ samplerPath: string; at: number } | undefined>;
}

/** The training in modes rl and auto, else why there is none. */
export type RlControl = { engine: TrainingControl } | { engine: undefined; reason: string };

/** `GET /v1/rl/steps?limit=`: how many of the latest steps (20 unless asked). */
const stepsQuery = z.object({ limit: wholeNumberParam(1, 1000).default(20) });

const rollbackSchema = z.union([z.object({ step: z.number().int().nonnegative() }).strict(), z.object({ latest: z.literal(true) }).strict()], {
  // Without it a body that fits neither form is refused as "(body): Invalid input".
  error: 'expected {"step": N} with N a step that saved weights (0: the weights the training run started from), or {"latest": true}',
});

/** Why `{"step": 0}` finds nothing to serve. */
const NO_RUN_START =
  'Step 0 has no saved weights to serve: the weights this training run started from were not kept (a run begun before MetaClaw kept them, whose steps have saved their state since, or a new run whose backend has not opened yet).';

/**
 * Manual control of training: one step now, the steps taken, the checkpoints that can be served,
 * and a rollback to one of them. Steps and rollbacks change the model that answers the agent and
 * spend on the training backend, so they need the admin token (the CLI sends it), like cross-scope
 * memory work.
 */
export function rlRoutes(control: RlControl, adminToken: AdminToken): (app: ProxyApp) => void {
  const engine = (): TrainingControl => {
    if (control.engine) return control.engine;
    throw new ConflictError(`RL training is not running: ${control.reason}.`, 'rl_not_running');
  };
  return (app) => {
    const requireAdmin = (headers: Parameters<AdminToken['grants']>[0]) => {
      if (!adminToken.grants(headers)) throw new PermissionError('admin_token_required', 'Training control needs the admin token (`metaclaw rl …` sends it).');
    };
    const trainStep = async (headers: Parameters<AdminToken['grants']>[0]) => {
      requireAdmin(headers);
      return await engine().runStep('manual');
    };
    app.post('/v1/rl/train_step', async (c) => c.json(await trainStep(c.env.incoming.headers)));
    // MetaClaw's name for the same action.
    app.post('/v1/admin/train_step', async (c) => c.json(await trainStep(c.env.incoming.headers)));

    app.get('/v1/rl/steps', async (c) => {
      const { limit } = parse(stepsQuery, c.req.query());
      const { steps, policy } = engine();
      return c.json({ object: 'list', data: (await steps.recent(limit)).map(presentStep), served: policy.describe() ?? null });
    });

    app.get('/v1/rl/checkpoints', async (c) => {
      const control = engine();
      const start = await control.runStart();
      return c.json({
        object: 'list',
        data: (await control.steps.checkpoints()).map(presentStep),
        start: start ? { step: 0, sampler_path: start.samplerPath, saved_at: new Date(start.at).toISOString() } : null,
        served: control.policy.describe() ?? null,
      });
    });

    app.post('/v1/rl/rollback', async (c) => {
      requireAdmin(c.env.incoming.headers);
      const body = parse(rollbackSchema, await readJson(c.req.raw));
      const control = engine();
      const target = await rollbackTarget(control, body);
      await control.policy.serve(target.step, target.samplerPath, !('latest' in body));
      return c.json({ served: control.policy.describe() });
    });
  };
}

/**
 * The weights a rollback serves: a step of the current run that saved them, or its step 0 (the
 * weights the run started from); `latest` takes the newest of these, step 0 while no step saved any.
 */
async function rollbackTarget(control: TrainingControl, body: z.infer<typeof rollbackSchema>): Promise<{ step: number; samplerPath: string }> {
  const runStart = async () => {
    const start = await control.runStart();
    return start ? { step: 0, samplerPath: start.samplerPath } : undefined;
  };
  if ('latest' in body) {
    const newest = (await control.steps.checkpoints())[0];
    const target = newest?.samplerPath ? { step: newest.step, samplerPath: newest.samplerPath } : await runStart();
    if (target) return target;
    throw new NotFoundError('No training step has saved weights yet.', 'checkpoint_not_found');
  }
  if (body.step === 0) {
    const start = await runStart();
    if (start) return start;
    throw new NotFoundError(NO_RUN_START, 'checkpoint_not_found');
  }
  const found = (await control.steps.checkpoints()).find((record) => record.step === body.step);
  if (found?.samplerPath) return { step: found.step, samplerPath: found.samplerPath };
  throw new NotFoundError(`Step ${body.step} has no saved weights to serve (see GET /v1/rl/checkpoints).`, 'checkpoint_not_found');
}

function presentStep(record: StepRecord): Record<string, unknown> {
  return {
    step: record.step,
    status: record.status,
    trigger: record.trigger,
    skill_generation: record.skillGeneration,
    samples: record.samples,
    loss: record.loss,
    metrics: record.metrics,
    sampler_path: record.samplerPath,
    started_at: new Date(record.startedAt).toISOString(),
    finished_at: record.finishedAt === null ? null : new Date(record.finishedAt).toISOString(),
    error: record.error,
  };
}
