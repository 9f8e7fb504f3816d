import { useCallback, useEffect, useState } from 'preact/hooks';

/** An error the proxy answered with, in the OpenAI or Anthropic error shape. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

async function errorOf(response: Response): Promise<ApiError> {
  let message = `${response.status} ${response.statusText}`;
  try {
    const body = (await response.json()) as { error?: { message?: string } };
    if (body.error?.message) message = body.error.message;
  } catch {
    // not JSON: keep the status line
  }
  if (response.status === 401) window.location.assign('/ui/login');
  return new ApiError(response.status, message);
}

export async function getJson<T>(path: string): Promise<T> {
  const response = await fetch(path, { headers: { accept: 'application/json' }, credentials: 'same-origin' });
  if (!response.ok) throw await errorOf(response);
  return (await response.json()) as T;
}

/**
 * A change through the proxy's own HTTP APIs (memory, skills): JSON in, JSON out. `headers` carry
 * what the API reads from them (the memory API's scope: `X-Memory-Scope`).
 */
export async function send<T>(method: 'POST' | 'PATCH' | 'PUT' | 'DELETE', path: string, body?: unknown, headers: Record<string, string> = {}): Promise<T> {
  const response = await fetch(path, {
    method,
    credentials: 'same-origin',
    headers: body === undefined ? { accept: 'application/json', ...headers } : { accept: 'application/json', 'content-type': 'application/json', ...headers },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  if (!response.ok) throw await errorOf(response);
  return (await response.json()) as T;
}

/** A file the proxy writes (an export), as a Blob the page can offer for download. */
export async function getBlob(path: string, headers: Record<string, string> = {}): Promise<Blob> {
  const response = await fetch(path, { headers, credentials: 'same-origin' });
  if (!response.ok) throw await errorOf(response);
  return response.blob();
}

export interface Loaded<T> {
  data: T | undefined;
  error: string | undefined;
  loading: boolean;
  reload: () => void;
}

/** One page's data: a single request, made again when the path changes or `reload` is called. */
export function useJson<T>(path: string | undefined): Loaded<T> {
  const [state, setState] = useState<{ data: T | undefined; error: string | undefined; loading: boolean }>({
    data: undefined,
    error: undefined,
    loading: true,
  });
  const [round, setRound] = useState(0);
  useEffect(() => {
    if (path === undefined) return;
    let current = true;
    setState((previous) => ({ ...previous, loading: true }));
    getJson<T>(path).then(
      (data) => current && setState({ data, error: undefined, loading: false }),
      (error: unknown) => current && setState({ data: undefined, error: error instanceof Error ? error.message : String(error), loading: false }),
    );
    return () => {
      current = false;
    };
  }, [path, round]);
  const reload = useCallback(() => setRound((value) => value + 1), []);
  return { ...state, reload };
}
