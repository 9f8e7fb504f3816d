import type { z } from 'zod';

/** How a value is written on the command line (`config set KEY VALUE`) and checked in YAML. */
export type ValueKind = 'string' | 'secret' | 'path' | 'integer' | 'number' | 'boolean' | 'enum' | 'list' | 'json';

/**
 * A key MetaClaw-TS accepts but does not act on: `compatibility` keys are MetaClaw's and have no
 * counterpart here (accepted so its config files load), `planned` keys belong to parts not built
 * yet (RL, the scheduler). Set to anything but its default, such a key warns at load.
 */
export interface NoEffect {
  readonly status: 'compatibility' | 'planned';
  /** Why it has no effect, shown in the warning and by `metaclaw config keys`. */
  readonly reason: string;
}

export interface KeyDefinition<T = unknown, K extends string = string> {
  /** Dotted path, e.g. `proxy.port`. */
  readonly key: K;
  readonly kind: ValueKind;
  readonly default: T;
  /** One line: what the key does. Shown by `metaclaw config show --docs` and in README. */
  readonly doc: string;
  /** Human text for error messages: what is expected. */
  readonly expected: string;
  readonly schema: z.ZodType<T>;
  /** For enums: the accepted values. */
  readonly values?: readonly string[];
  /** Values that are masked in `config show` and never logged. */
  readonly secret?: boolean;
  /**
   * For a secret key whose value is mostly not secret (a database URL and its password): shows the
   * value with only the secret part hidden. A value it leaves unchanged holds no secret.
   */
  readonly mask?: (value: string) => string;
  /** For a key whose value holds secrets inside it (a fallback's api_key): the value as it may be shown, those masked. */
  readonly redact?: (value: unknown) => unknown;
  /** Absent: the key does what `doc` says. */
  readonly noEffect?: NoEffect;
}
