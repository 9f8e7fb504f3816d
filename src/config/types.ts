import type { z } from 'zod';

/** How a value is written on the command line (`config set KEY VALUE`) and checked in YAML. */
export type ValueKind = 'string' | 'secret' | 'path' | 'integer' | 'number' | 'boolean' | 'enum' | 'list' | 'json';

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
}
