/**
 * One status-typed error hierarchy for everything the proxy itself rejects or fails at.
 * Each error is mapped once, in proxy/error-body.ts, to the client API's own error shape.
 */

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

export class MetaclawError extends Error {
  readonly status: number;
  readonly kind: ErrorKind;
  /** The offending field, when the error is about one (e.g. `messages.0.role`). */
  readonly param: string | undefined;
  /** A stable machine-readable code, e.g. `invalid_json`. */
  readonly code: string;

  constructor(status: number, kind: ErrorKind, code: string, message: string, options: { param?: string; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.status = status;
    this.kind = kind;
    this.code = code;
    this.param = options.param;
  }
}

export class BadRequestError extends MetaclawError {
  constructor(code: string, message: string, param?: string) {
    super(400, 'invalid_request_error', code, message, param === undefined ? {} : { param });
  }
}

export class AuthenticationError extends MetaclawError {
  constructor(message = 'A valid MetaClaw proxy key is required (Authorization: Bearer <key> or x-api-key).') {
    super(401, 'authentication_error', 'invalid_api_key', message);
  }
}

export class PermissionError extends MetaclawError {
  constructor(code: string, message: string, param?: string) {
    super(403, 'permission_error', code, message, param === undefined ? {} : { param });
  }
}

export class NotFoundError extends MetaclawError {
  constructor(message: string, code = 'not_found') {
    super(404, 'not_found_error', code, message);
  }
}

export class PayloadTooLargeError extends MetaclawError {
  constructor(limitBytes: number) {
    super(413, 'request_too_large', 'request_too_large', `Request body exceeds the proxy limit of ${limitBytes} bytes (proxy.max_body_mb).`);
  }
}

export class UpstreamConnectionError extends MetaclawError {
  constructor(message: string, cause?: unknown) {
    super(502, 'api_error', 'upstream_unreachable', message, { cause });
  }
}

export class UpstreamTimeoutError extends MetaclawError {
  constructor(message: string) {
    super(504, 'timeout_error', 'upstream_timeout', message);
  }
}

export class ServiceUnavailableError extends MetaclawError {
  constructor(message: string, code = 'unavailable') {
    super(503, 'overloaded_error', code, message);
  }
}

/** Configuration problems: they stop `start` with a message naming the file, key, value and expectation. */
export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

export function errorMessage(error: unknown): string {
  if (error instanceof Error) return error.message;
  return String(error);
}
