/**
 * Types shared by every claw adapter: what to wire, where the agent lives, and what happened.
 */

import type { CLAW_TYPES } from '../config/schema.js';
import { MetaclawError } from '../errors.js';

export type ClawType = (typeof CLAW_TYPES)[number];

export interface WiringTarget {
  /** e.g. http://127.0.0.1:30000 (no trailing slash, no /v1) */
  proxyUrl: string;
  /** the key the agent presents to the proxy ("metaclaw" when the proxy has none) */
  apiKey: string;
  /** model id the agent should ask for */
  model: string;
  /** protocol the agent should speak (OpenClaw supports both; the others are fixed) */
  apiFormat: 'openai' | 'anthropic';
  /** 0 = do not set */
  contextWindow: number;
  /** OpenClaw only: also load and enable MetaClaw's plugin from this folder, with this config. */
  plugin?: { path: string; config: Record<string, unknown> };
}

export interface CommandOutcome {
  code: number;
  stdout: string;
  stderr: string;
}

export interface ClawEnvironment {
  /** the user's home folder (tests: a temp folder) */
  home: string;
  /** OPENCLAW_CONFIG_PATH, OPENCLAW_STATE_DIR, HERMES_HOME, … */
  env: Readonly<Record<string, string | undefined>>;
  /** where ledger and backups go: <metaclawHome>/claws/ */
  metaclawHome: string;
  platform: NodeJS.Platform;
  /** the user's numeric id (launchd's gui/<uid> domain); defaults to process.getuid() */
  uid?: number;
  /** Runs a command (execFile, no shell) with a timeout; resolves with its exit code and output, never rejects for a non-zero exit; rejects only if the binary is missing (ENOENT). */
  run(command: string, args: readonly string[], options?: { timeoutMs?: number }): Promise<CommandOutcome>;
  /** Absolute path of a binary on PATH, or undefined. */
  which(binary: string): string | undefined;
}

export interface Detection {
  type: ClawType;
  /** the agent's human name, e.g. "OpenClaw" */
  name: string;
  /** its config file exists, its folder exists, or its CLI is on PATH */
  installed: boolean;
  /** where its config file is (or would be); undefined when it cannot be located */
  configPath: string | undefined;
  configExists: boolean;
  /** its CLI on PATH, if any */
  binaryPath: string | undefined;
  /** the ledger says MetaClaw wired it */
  wired: boolean;
  notes: string[];
}

export interface ApplyResult {
  type: ClawType;
  /** something was written or a command changed the agent's settings */
  changed: boolean;
  configPath: string | undefined;
  /** the pre-MetaClaw copy of the config file, when there is one */
  backupPath?: string;
  restarted: boolean;
  messages: string[];
}

export interface VerifyResult {
  wired: boolean;
  problems: string[];
  /** notes that are not problems, e.g. a validation command that could not run */
  messages: string[];
}

export interface UnwireResult {
  /** the agent no longer points at MetaClaw (false when there was nothing to undo) */
  restored: boolean;
  /** every file is byte-for-byte what it was before MetaClaw (false when the user's later edits were kept) */
  exact: boolean;
  restarted: boolean;
  messages: string[];
}

export interface ClawAdapter {
  readonly type: ClawType;
  readonly name: string;
  detect(environment: ClawEnvironment): Promise<Detection>;
  apply(target: WiringTarget, environment: ClawEnvironment): Promise<ApplyResult>;
  verify(target: WiringTarget, environment: ClawEnvironment): Promise<VerifyResult>;
  unwire(environment: ClawEnvironment): Promise<UnwireResult>;
}

export type ClawErrorStatus =
  | 'config_missing'
  | 'config_malformed'
  | 'config_conflict'
  | 'not_installed'
  | 'binary_missing'
  | 'command_failed'
  | 'edit_failed'
  | 'write_failed'
  | 'ledger_corrupt'
  | 'invalid_target'
  | 'unknown_claw';

/** A wiring failure with a message meant for the user. Whenever one is thrown before a write, nothing was changed. */
export class ClawError extends MetaclawError {
  readonly status: ClawErrorStatus;
  readonly claw: ClawType | undefined;
  readonly path: string | undefined;

  constructor(status: ClawErrorStatus, message: string, options: { claw?: ClawType; path?: string; cause?: unknown } = {}) {
    super(status, message, options.cause === undefined ? {} : { cause: options.cause });
    this.status = status;
    this.claw = options.claw;
    this.path = options.path;
  }
}
