// Loaded into a benchmark's child process (`node --expose-gc --import ./bench/heap-probe.mjs`):
// on SIGUSR2 it collects garbage and prints the heap still in use, so a benchmark reads what
// the process holds, not what its allocator has yet to give back (RSS).
process.on("SIGUSR2", () => {
  globalThis.gc?.();
  const m = process.memoryUsage();
  process.stdout.write(`heap ${m.heapUsed} ${m.external + m.arrayBuffers} ${m.rss}\n`);
});
