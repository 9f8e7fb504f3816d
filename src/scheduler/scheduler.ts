import { errorMessage } from '../errors.js';
import type { Logger } from '../logging/index.js';
import type { TrainingWindow } from '../rl/types.js';
import type { BusyCalendar, CalendarStatus } from './calendar.js';
import { calendarFor } from './calendars.js';
import { probeKeyboardIdle, type KeyboardIdleProbe } from './keyboard-idle.js';
import { SleepHours } from './sleep-hours.js';
import type { PersistedScheduler, SchedulerState } from './state-store.js';
import {
  systemClock,
  type Clock,
  type ExpectedWindow,
  type SchedulerSettings,
  type SchedulerStateName,
  type StepOutcome,
  type StepRecord,
  type WindowDecision,
} from './types.js';
import { clockTime, decideWindow, expectWindows, NODE_IDLE_REASON, type KeyboardReading, type WindowInputs } from './window.js';

/** The proxy's record of main turns (conversation/main-activity.ts). */
export interface MainTurns {
  readonly lastMainTurnAt: number | null;
  readonly active: number;
  /** Called when a main turn starts and when it is answered. */
  onMainTurn?(listener: () => void): void;
}

export interface SchedulerDeps {
  /** where the state and window history are kept (SchedulerStateStore on the personal install) */
  state: SchedulerState;
  settings: SchedulerSettings;
  /** the proxy's main turns; null on a team node, where only sleep hours and the calendar open a window */
  activity: MainTurns | null;
  clock?: Clock;
  /** how the keyboard's idle time is read; default: probe this machine once at start */
  keyboard?: () => Promise<KeyboardIdleProbe>;
  logger?: Logger;
  /** re-evaluate this often (default 15 s); a main turn re-evaluates at once */
  tickMs?: number;
  /** reload the calendar this often (default 15 min) */
  calendarRefreshMs?: number;
}

/** What a training step reported back: it ran to the end, was abandoned, or failed. */
export type StepResult<T> =
  { ran: true; outcome: 'done'; value: T } | { ran: true; outcome: 'abandoned' | 'failed'; error: string } | { ran: false; reason: string };

/**
 * The idle-window scheduler: IDLE_WAIT → WINDOW_OPEN → UPDATING → PAUSING, persisted in the store
 * on every transition. A window opens and closes with the sources (see window.ts); a training step
 * runs through `runStep`, which moves to UPDATING and hands the step a signal that fires when the
 * window closes (PAUSING): the step then finishes or abandons, and its batch waits for the next
 * window. A restart during a step keeps that step pending, batch and all, for the trainer to run
 * again. Probes run on timers, off the request path: a main turn only bumps a counter and asks for
 * a re-evaluation on the next turn of the event loop.
 */
export class Scheduler implements TrainingWindow {
  private readonly clock: Clock;
  private readonly store: SchedulerState;
  private readonly sleep: SleepHours;
  private readonly calendar: BusyCalendar | null;
  private keyboard: KeyboardReading = { available: false, reason: 'not probed yet' };
  private keyboardRead: (() => Promise<number>) | undefined;
  private persisted: PersistedScheduler;
  private decision: WindowDecision | undefined;
  private stepAbort: AbortController | undefined;
  private timers: NodeJS.Timeout[] = [];
  private evaluateSoon: NodeJS.Immediate | undefined;
  private stopped = false;

  constructor(private readonly deps: SchedulerDeps) {
    this.clock = deps.clock ?? systemClock;
    this.store = deps.state;
    this.sleep = new SleepHours(deps.settings.sleepStart, deps.settings.sleepEnd);
    this.calendar = calendarFor(deps.settings, this.clock);
    this.persisted = this.recover(this.store.read());
  }

  /** Probes the keyboard once, loads the calendar, then evaluates on a timer and at every main turn. */
  start(): void {
    const tickMs = this.deps.tickMs ?? 15_000;
    const every = (ms: number, run: () => void) => {
      const timer = setInterval(run, ms);
      timer.unref();
      this.timers.push(timer);
    };
    this.deps.activity?.onMainTurn?.(() => {
      // Synchronous on the request path: only schedule the re-evaluation.
      if (this.stopped || this.evaluateSoon) return;
      this.evaluateSoon = setImmediate(() => {
        this.evaluateSoon = undefined;
        this.guard(() => this.tick());
      });
    });
    // A failed first evaluation (the store cannot be written) is logged; the timer tries again.
    void this.initialise()
      .catch((error: unknown) => this.logFailure(error))
      .then(() => {
        if (this.stopped) return;
        every(tickMs, () => void this.evaluate().catch((error: unknown) => this.logFailure(error)));
        if (this.calendar) every(this.deps.calendarRefreshMs ?? 15 * 60_000, () => void this.calendar?.refresh().then(() => this.logCalendar()));
      });
  }

  stop(): void {
    this.stopped = true;
    for (const timer of this.timers) clearInterval(timer);
    this.timers = [];
    if (this.evaluateSoon) clearImmediate(this.evaluateSoon);
    this.stepAbort?.abort(new Error('MetaClaw is stopping'));
  }

  /** Probes the keyboard and loads the calendar once, then evaluates. */
  async initialise(): Promise<void> {
    await Promise.all([this.probeKeyboard(), this.calendar?.refresh().then(() => this.logCalendar())]);
    await this.evaluate();
  }

  /** Reads the keyboard (when it can be read), then decides and moves the state. */
  async evaluate(): Promise<WindowDecision> {
    if (this.keyboardRead && this.keyboard.available) {
      const method = this.keyboard.method;
      try {
        this.keyboard = { available: true, method, idleMs: await this.keyboardRead(), error: null };
      } catch (error) {
        // A read that fails after a good probe: no idle signal this time, the other sources still count.
        this.keyboard = { available: true, method, idleMs: null, error: errorMessage(error) };
      }
    }
    return this.tick();
  }

  /** Decides from the latest readings and moves the state; synchronous and cheap. */
  tick(): WindowDecision {
    const now = this.clock.now();
    const state = this.persisted.state;
    const wasOpen = state === 'WINDOW_OPEN' || state === 'UPDATING';
    const decision = decideWindow(now, this.inputs(), wasOpen);
    this.decision = decision;
    if (state === 'IDLE_WAIT' && decision.open) this.transition('WINDOW_OPEN', `window open: ${this.why(decision)}`, decision);
    else if (state === 'WINDOW_OPEN' && !decision.open) this.transition('IDLE_WAIT', `window closed: ${this.whyClosed(decision)}`, decision);
    else if (state === 'UPDATING' && !decision.open) {
      const reason = `window closed during step ${this.persisted.step?.id ?? '?'}: ${this.whyClosed(decision)}`;
      this.transition('PAUSING', reason, decision);
      this.stepAbort?.abort(new Error(reason));
    } else if (wasOpen && decision.open) this.persisted = { ...this.persisted, windowSources: decision.sources, windowUntil: decision.until };
    return decision;
  }

  /** TrainingWindow: a window is open now (re-decided at each call). */
  isOpen(): boolean {
    this.guard(() => this.tick());
    return this.persisted.state === 'WINDOW_OPEN' || this.persisted.state === 'UPDATING';
  }

  /** TrainingWindow: the state and why, in one line. */
  describe(): string {
    const { state, reason } = this.persisted;
    const next = state === 'IDLE_WAIT' ? this.nextWindow()[0] : undefined;
    return `${state}: ${reason}${next ? `; next window ${clockTime(next.at)} (${next.source})` : ''}`;
  }

  get state(): SchedulerStateName {
    return this.persisted.state;
  }

  /** A step that did not finish (window closed, failure, restart): its batch waits for the next window. */
  /** The windows that overlapped [from, to], oldest first: when each opened, closed, and what held it open. */
  windowHistory(from: number, to: number, limit?: number) {
    return this.store.windows(from, to, limit);
  }

  pendingStep(): StepRecord | null {
    const step = this.persisted.step;
    return step?.pending ? { id: step.id, batch: step.batch, startedAt: step.startedAt } : null;
  }

  /** Drops the pending step (its samples went stale, e.g. the skill generation moved on); false when none. */
  discardPendingStep(reason: string): boolean {
    const pending = this.pendingStep();
    if (!pending) return false;
    const now = this.clock.now();
    this.persisted = { ...this.persisted, step: null };
    this.store.write(this.persisted, now);
    this.deps.logger?.info({ step: pending.id, reason }, 'scheduler: pending step discarded');
    return true;
  }

  /**
   * Runs one training step in the open window. `run` gets a signal that aborts when the window
   * closes (or MetaClaw stops): a step past its point of no return may finish anyway, otherwise it
   * should stop and throw. Resolving counts as done; throwing after the signal, as abandoned (the
   * batch waits, pending); throwing otherwise, as failed (pending too). Refused unless the window
   * is open and no step runs, and for another step while one is pending (its batch comes first).
   */
  async runStep<T>(step: { id: string; batch: unknown }, run: (signal: AbortSignal) => Promise<T>): Promise<StepResult<T>> {
    if (!this.isOpen() || this.persisted.state !== 'WINDOW_OPEN') return { ran: false, reason: this.describe() };
    const pending = this.pendingStep();
    if (pending && pending.id !== step.id)
      return { ran: false, reason: `step ${pending.id} is pending: run it again first (pendingStep()), or discard it (discardPendingStep())` };
    const controller = new AbortController();
    this.stepAbort = controller;
    this.persisted = { ...this.persisted, step: { id: step.id, batch: step.batch, startedAt: this.clock.now(), pending: false } };
    this.transition('UPDATING', `training step ${step.id}`, this.decision);
    let result: StepResult<T>;
    try {
      result = { ran: true, outcome: 'done', value: await run(controller.signal) };
    } catch (error) {
      result = { ran: true, outcome: controller.signal.aborted ? 'abandoned' : 'failed', error: errorMessage(error) };
    } finally {
      this.stepAbort = undefined;
    }
    this.endStep(result.ran ? result.outcome : 'failed');
    return result;
  }

  private endStep(outcome: StepOutcome): void {
    const now = this.clock.now();
    const step = this.persisted.step!;
    const done = outcome === 'done';
    this.persisted = {
      ...this.persisted,
      step: done ? null : { ...step, pending: true },
      lastStep: { id: step.id, outcome, endedAt: now },
      stepsDone: this.persisted.stepsDone + (done ? 1 : 0),
      stepsAbandoned: this.persisted.stepsAbandoned + (done ? 0 : 1),
    };
    const what = done ? `step ${step.id} done` : `step ${step.id} ${outcome}; its batch waits for the next window`;
    if (this.persisted.state === 'PAUSING') this.transition('IDLE_WAIT', what, this.decision);
    else this.transition('WINDOW_OPEN', what, this.decision);
    this.guard(() => this.tick());
  }

  /** When windows are expected next, soonest first. */
  nextWindow(): ExpectedWindow[] {
    return expectWindows(this.clock.now(), this.inputs());
  }

  /** The `scheduler` section of /status. */
  status(): SchedulerStatus {
    const decision = this.decision ?? decideWindow(this.clock.now(), this.inputs(), false);
    const { state, since, reason, step, lastStep, stepsDone, stepsAbandoned } = this.persisted;
    const expected = this.nextWindow();
    return {
      enabled: true,
      state,
      since: new Date(since).toISOString(),
      reason,
      window: {
        open: state === 'WINDOW_OPEN' || state === 'UPDATING',
        sources: decision.sources,
        until: decision.until === null ? null : new Date(decision.until).toISOString(),
        blocked_by: decision.blockedBy,
      },
      sources: decision.readings.map((reading) => ({ source: reading.source, available: reading.available, open: reading.open, detail: reading.detail })),
      keyboard_idle: this.keyboard.available ? { available: true, method: this.keyboard.method } : { available: false, reason: this.keyboard.reason },
      calendar: this.calendar?.status() ?? null,
      settings: {
        sleep_hours: this.sleep.label,
        idle_threshold_minutes: this.deps.settings.idleThresholdMs / 60_000,
        min_window_minutes: this.deps.settings.minWindowMs / 60_000,
      },
      step: step ? { id: step.id, started_at: new Date(step.startedAt).toISOString(), pending: step.pending } : null,
      last_step: lastStep ? { id: lastStep.id, outcome: lastStep.outcome, ended_at: new Date(lastStep.endedAt).toISOString() } : null,
      steps: { done: stepsDone, abandoned: stepsAbandoned },
      next_window: expected.map((window) => ({
        source: window.source,
        at: new Date(window.at).toISOString(),
        until: window.until === null ? null : new Date(window.until).toISOString(),
        detail: window.detail,
      })),
    };
  }

  private inputs(): WindowInputs {
    return {
      sleep: this.sleep,
      keyboard: this.keyboard,
      proxy: this.deps.activity ? { lastMainTurnAt: this.deps.activity.lastMainTurnAt, active: this.deps.activity.active } : null,
      calendar: this.calendar,
      idleThresholdMs: this.deps.settings.idleThresholdMs,
      minWindowMs: this.deps.settings.minWindowMs,
    };
  }

  /** At start: a step cut by the restart waits, pending, and the state starts over in IDLE_WAIT. */
  private recover(row: PersistedScheduler | undefined): PersistedScheduler {
    const now = this.clock.now();
    if (!row) {
      const fresh: PersistedScheduler = {
        state: 'IDLE_WAIT',
        since: now,
        reason: 'started',
        windowSources: [],
        windowUntil: null,
        step: null,
        lastStep: null,
        stepsDone: 0,
        stepsAbandoned: 0,
      };
      this.store.write(fresh, now);
      return fresh;
    }
    if (row.state === 'IDLE_WAIT') return row;
    let recovered: PersistedScheduler;
    if ((row.state === 'UPDATING' || row.state === 'PAUSING') && row.step) {
      recovered = {
        ...row,
        state: 'IDLE_WAIT',
        since: now,
        reason: `restarted during step ${row.step.id} (${row.state}); it waits for the next window`,
        step: { ...row.step, pending: true },
        lastStep: { id: row.step.id, outcome: 'interrupted', endedAt: now },
        stepsAbandoned: row.stepsAbandoned + 1,
      };
    } else recovered = { ...row, state: 'IDLE_WAIT', since: now, reason: `restarted in ${row.state}; the window is decided again` };
    this.store.write(recovered, now);
    this.deps.logger?.info({ scheduler: recovered.state, step: recovered.step?.id }, recovered.reason);
    return recovered;
  }

  private transition(to: SchedulerStateName, reason: string, decision: WindowDecision | undefined): void {
    const now = this.clock.now();
    const open = to === 'WINDOW_OPEN' || to === 'UPDATING';
    const next: PersistedScheduler = {
      ...this.persisted,
      state: to,
      since: now,
      reason,
      windowSources: open ? (decision?.sources ?? []) : [],
      windowUntil: open ? (decision?.until ?? null) : null,
    };
    this.store.write(next, now);
    this.persisted = next;
    this.deps.logger?.info({ scheduler: to }, `scheduler ${to}: ${reason}`);
  }

  private why(decision: WindowDecision): string {
    return `${decision.sources.join(' + ')}${decision.until === null ? ' (until activity)' : `, until ${clockTime(decision.until)}`}`;
  }

  private whyClosed(decision: WindowDecision): string {
    return decision.blockedBy ?? 'no source holds it open';
  }

  private async probeKeyboard(): Promise<void> {
    if (!this.deps.activity) {
      this.keyboard = { available: false, reason: NODE_IDLE_REASON };
      return;
    }
    const probe = await (this.deps.keyboard ?? (() => probeKeyboardIdle()))().catch((error: unknown): KeyboardIdleProbe => ({
      available: false,
      reason: errorMessage(error),
    }));
    if (probe.available) {
      this.keyboardRead = probe.read;
      this.keyboard = { available: true, method: probe.method, idleMs: null, error: null };
    } else this.keyboard = { available: false, reason: `${probe.reason}; proxy idle is used instead` };
    this.deps.logger?.info({ keyboard_idle: probe.available ? probe.method : probe.reason }, 'scheduler: keyboard idle source');
  }

  private logCalendar(): void {
    const status = this.calendar?.status();
    if (status?.error) this.deps.logger?.warn({ calendar: status.source, error: status.error }, 'scheduler: could not load the calendar');
  }

  private guard(run: () => void): void {
    try {
      run();
    } catch (error) {
      this.logFailure(error);
    }
  }

  private logFailure(error: unknown): void {
    this.deps.logger?.error({ err: error }, 'scheduler: evaluation failed; the state is kept');
  }
}

export interface SchedulerStatus {
  enabled: true;
  state: SchedulerStateName;
  since: string;
  reason: string;
  window: { open: boolean; sources: string[]; until: string | null; blocked_by: string | null };
  sources: Array<{ source: string; available: boolean; open: boolean; detail: string }>;
  keyboard_idle: { available: true; method: string } | { available: false; reason: string };
  calendar: CalendarStatus | null;
  settings: { sleep_hours: string; idle_threshold_minutes: number; min_window_minutes: number };
  step: { id: string; started_at: string; pending: boolean } | null;
  last_step: { id: string; outcome: StepOutcome; ended_at: string } | null;
  steps: { done: number; abandoned: number };
  next_window: Array<{ source: string; at: string; until: string | null; detail: string }>;
}
