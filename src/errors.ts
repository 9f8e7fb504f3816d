/**
 * One error hierarchy, as the SDKs have: every error MetaClaw raises on purpose is a MetaclawError
 * with a stable `code`, and each area has its subclass (requests the proxy answers, configuration,
 * agent wiring, the CLI, learning, skills, memory, the store). Errors that are none of these are
 * programming errors or come from a library, and are reported as such.
 */

/** The root: a message for people, a stable code for programs, and the cause when there is one. */
export class MetaclawError extends Error {
  /** A stable machine-readable code, e.g. `invalid_json`, `config_invalid`. */
  readonly code: string;

  constructor(code: string, message: string, options: { cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.code = code;
  }
}

export type ErrorKind =
  | 'invalid_request_error'
  | 'authentication_error'
  | 'permission_error'
  | 'not_found_error'
  | 'request_too_large'
  | 'rate_limit_error'
  | 'api_error'
  | 'overloaded_error'
  | 'timeout_error';

/** What the proxy answers an HTTP request with: a status and a kind, mapped once (shared/api-errors.ts) to each API's error body. */
export class RequestError extends MetaclawError {
  readonly status: number;
  readonly kind: ErrorKind;
  /** The offending field, when the error is about one (e.g. `messages.0.role`). */
  readonly param: string | undefined;

  constructor(status: number, kind: ErrorKind, code: string, message: string, options: { param?: string; cause?: unknown } = {}) {
    super(code, message, options.cause === undefined ? {} : { cause: options.cause });
    this.status = status;
    this.kind = kind;
    this.param = options.param;
  }
}

export class BadRequestError extends RequestError {
  constructor(code: string, message: string, param?: string) {
    super(400, 'invalid_request_error', code, message, param === undefined ? {} : { param });
  }
}

export class AuthenticationError extends RequestError {
  constructor(message = 'A valid MetaClaw proxy key is required (Authorization: Bearer <key> or x-api-key).') {
    super(401, 'authentication_error', 'invalid_api_key', message);
  }
}

export class PermissionError extends RequestError {
  constructor(code: string, message: string, param?: string) {
    super(403, 'permission_error', code, message, param === undefined ? {} : { param });
  }
}

export class NotFoundError extends RequestError {
  constructor(message: string, code = 'not_found') {
    super(404, 'not_found_error', code, message);
  }
}

/** The request is valid but the proxy's state does not allow it (e.g. training control while RL is off). */
export class ConflictError extends RequestError {
  constructor(message: string, code = 'conflict') {
    super(409, 'invalid_request_error', code, message);
  }
}

export class PayloadTooLargeError extends RequestError {
  constructor(limitBytes: number) {
    super(413, 'request_too_large', 'request_too_large', `Request body exceeds the proxy limit of ${limitBytes} bytes (proxy.max_body_mb).`);
  }
}

/** A request that did not all arrive within proxy.request_timeout_seconds (a body sent a byte at a time holds a connection). */
export class RequestTimeoutError extends RequestError {
  constructor(message: string) {
    super(408, 'timeout_error', 'request_timeout', message);
  }
}

export class UpstreamConnectionError extends RequestError {
  constructor(message: string, cause?: unknown) {
    super(502, 'api_error', 'upstream_unreachable', message, { cause });
  }
}

export class UpstreamTimeoutError extends RequestError {
  constructor(message: string) {
    super(504, 'timeout_error', 'upstream_timeout', message);
  }
}

export class ServiceUnavailableError extends RequestError {
  constructor(message: string, code = 'unavailable') {
    super(503, 'overloaded_error', code, message);
  }
}

/** Configuration problems: they stop `start` with a message naming the file, key, value and expectation. */
export class ConfigError extends MetaclawError {
  constructor(message: string, code = 'config_invalid') {
    super(code, message);
  }
}

/** A skill library operation that cannot be done (an unknown proposal, a version that cannot be restored, an invalid file). */
export class SkillError extends MetaclawError {
  constructor(message: string, code = 'skill_error') {
    super(code, message);
  }
}

/** A memory operation that cannot be done. */
export class MemoryError extends MetaclawError {
  constructor(message: string, code = 'memory_error') {
    super(code, message);
  }
}

/** A team operation that cannot be done (an unknown member, a name taken or malformed). */
export class TeamError extends MetaclawError {
  constructor(message: string, code = 'team_error') {
    super(code, message);
  }
}

/** The store holds something it should not (a body part missing, a record that does not parse). */
export class StoreError extends MetaclawError {
  constructor(message: string, code = 'store_inconsistent', options: { cause?: unknown } = {}) {
    super(code, message, options);
  }
}

/** An upstream answered something unusable outside the relay (embeddings, model lists). */
export class UpstreamError extends MetaclawError {
  constructor(
    message: string,
    readonly status: number | undefined = undefined,
    code = 'upstream_error',
  ) {
    super(code, message);
  }
}

/** Where a training service says a failed request's fault lies (Tinker's `RequestErrorCategory`). */
export type RlFailureCategory = 'user' | 'server' | 'unknown';

/**
 * The RL training service (Tinker, MinT) refused or failed a request, or its backend is misconfigured.
 * `category` is the service's own verdict when it gave one; `status` the HTTP status when one applies.
 */
export class RlBackendError extends MetaclawError {
  readonly category: RlFailureCategory | undefined;
  readonly status: number | undefined;

  constructor(message: string, options: { code?: string; category?: RlFailureCategory; status?: number; cause?: unknown } = {}) {
    super(options.code ?? 'rl_backend_error', message, options.cause === undefined ? {} : { cause: options.cause });
    this.category = options.category;
    this.status = options.status;
  }
}

/**
 * A broken promise inside MetaClaw itself (a document restored from the wrong kind, a placeholder
 * without a value): a bug to report, never the user's doing.
 */
export class InternalError extends MetaclawError {
  constructor(message: string) {
    super('internal_error', message);
  }
}

export function errorMessage(error: unknown): string {
  if (error instanceof Error) return error.message;
  return String(error);
}
