/** How long one slice of a long computation holds the event loop before other work gets a turn. */
export const SLICE_MS = 10;

/**
 * Runs `step` for 0 … count-1 in order, letting the event loop run (setImmediate) each time a slice
 * has taken `sliceMs`: other requests then wait for a slice, not for the whole computation.
 */
export async function inSlices(count: number, step: (index: number) => void, sliceMs = SLICE_MS): Promise<void> {
  let sliceStart = performance.now();
  for (let index = 0; index < count; index++) {
    step(index);
    if (performance.now() - sliceStart < sliceMs) continue;
    await new Promise((resolve) => setImmediate(resolve));
    sliceStart = performance.now();
  }
}
