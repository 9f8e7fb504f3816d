/**
 * A signal that aborts when `parent` does, or with a `TimeoutError` after `ms`, and `done()` to call
 * once the call it guards has settled. Not `AbortSignal.any([parent, AbortSignal.timeout(ms)])`:
 * Node can garbage-collect such a composite before its timer fires (nodejs/node#57736), and a call
 * that hangs then never times out. Here the timer holds the controller until `done()`.
 */
export function deadlineSignal(parent: AbortSignal | undefined, ms: number): { signal: AbortSignal; done: () => void } {
  const controller = new AbortController();
  const onAbort = () => controller.abort(parent?.reason);
  const timer = setTimeout(() => controller.abort(new DOMException('The operation was aborted due to timeout', 'TimeoutError')), ms);
  // Like AbortSignal.timeout's timer, this one does not keep the process alive.
  timer.unref();
  if (parent?.aborted) controller.abort(parent.reason);
  else parent?.addEventListener('abort', onAbort, { once: true });
  return {
    signal: controller.signal,
    done: () => {
      clearTimeout(timer);
      parent?.removeEventListener('abort', onAbort);
    },
  };
}
