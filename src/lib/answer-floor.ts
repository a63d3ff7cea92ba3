// An answer whose timing must not tell which way it went (a reset or a sign-up asked for an
// address that has an account or not, a domain allowed or not): the work for the slower case
// runs under a floor that every answer waits out.

/** Runs `work`, then waits until `floorMs` has passed since the start, whether it threw or not. */
export async function noSoonerThan<T>(floorMs: number, work: () => Promise<T>): Promise<T> {
  const started = performance.now();
  try {
    return await work();
  } finally {
    const wait = floorMs - (performance.now() - started);
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
  }
}
