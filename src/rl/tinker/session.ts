import { errorMessage } from '../../errors.js';
import { VERSION } from '../../version.js';
import type { TinkerTransport } from './transport.js';
import { WIRE_SDK_VERSION, createSessionResponseSchema } from './wire.js';

/**
 * A Tinker session: created once, kept alive by a heartbeat every 10 s (the service ends sessions
 * that stop beating; the SDK warns after 2 minutes without a successful beat, and so do we).
 * It also hands out the per-session counters the wire wants: `model_seq_id` for training clients
 * and `sampling_session_seq_id` for sampling sessions.
 */

export interface SessionOptions {
  heartbeatIntervalMs?: number;
  /** how long heartbeats may fail before `onWarning` is told */
  heartbeatWarnAfterMs?: number;
  onWarning?: (message: string) => void;
}

export class TinkerSession {
  private heartbeat: NodeJS.Timeout | undefined;
  private lastBeat = Date.now();
  private warned = false;
  private beating = false;
  private modelCounter = 0;
  private samplingCounter = 0;

  private constructor(
    private readonly transport: TinkerTransport,
    readonly id: string,
    private readonly options: SessionOptions,
  ) {}

  /** `patienceMs`: how long to keep trying to reach the service (the transport's `post`). */
  static async create(transport: TinkerTransport, options: SessionOptions = {}, signal?: AbortSignal, patienceMs?: number): Promise<TinkerSession> {
    const body = { tags: ['metaclaw-ts'], user_metadata: { client: 'metaclaw-ts', client_version: VERSION }, sdk_version: WIRE_SDK_VERSION };
    const answer = createSessionResponseSchema.parse(
      await transport.post('/api/v1/create_session', body, { ...(signal ? { signal } : {}), ...(patienceMs === undefined ? {} : { patienceMs }) }),
    );
    if (answer.warning_message) options.onWarning?.(`${transport.label}: ${answer.warning_message}`);
    if (answer.error_message) options.onWarning?.(`${transport.label}: ${answer.error_message}`);
    const session = new TinkerSession(transport, answer.session_id, options);
    session.start();
    return session;
  }

  nextModelSeqId(): number {
    return this.modelCounter++;
  }

  nextSamplingSessionSeqId(): number {
    return this.samplingCounter++;
  }

  private start(): void {
    const interval = this.options.heartbeatIntervalMs ?? 10_000;
    const warnAfter = this.options.heartbeatWarnAfterMs ?? 120_000;
    this.heartbeat = setInterval(() => {
      if (this.beating) return;
      this.beating = true;
      const signal = AbortSignal.timeout(Math.max(interval, 1000));
      this.transport
        .post('/api/v1/session_heartbeat', { session_id: this.id }, { signal })
        .then(() => {
          this.lastBeat = Date.now();
          this.warned = false;
        })
        .catch((error: unknown) => {
          if (!this.warned && Date.now() - this.lastBeat >= warnAfter) {
            this.warned = true;
            this.options.onWarning?.(
              `${this.transport.label} session heartbeat failing for ${Math.round((Date.now() - this.lastBeat) / 1000)} s: ${errorMessage(error)}`,
            );
          }
        })
        .finally(() => {
          this.beating = false;
        });
    }, interval);
    this.heartbeat.unref();
  }

  stop(): void {
    if (this.heartbeat) clearInterval(this.heartbeat);
    this.heartbeat = undefined;
  }
}
