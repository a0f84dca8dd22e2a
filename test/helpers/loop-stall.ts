// How long the event loop was held while some work ran (the server runs in the test's process).
// Two measures: monitorEventLoopDelay (wall clock) also counts the time the operating system
// gives other processes, which on a machine shared with busy neighbours passes 100 ms with no long
// task in this process at all. A long task is CPU work: between two ticks of a 5 ms timer it takes
// both wall time and CPU time, so the smaller of the two deltas bounds from below any stretch the
// loop was held (CPU time of the whole process, so other threads can only make it larger, never
// hide a block).
import { monitorEventLoopDelay } from 'node:perf_hooks';

export interface LoopStall {
  /** The longest stretch the loop was held by CPU work, in ms. */
  heldMs: number;
  /** monitorEventLoopDelay's maximum, in ms (wall clock). */
  delayMaxMs: number;
  /** How long the work took, in ms. */
  tookMs: number;
}

export async function measureLoopStall<T>(work: () => Promise<T>): Promise<{ result: T; stall: LoopStall }> {
  const delay = monitorEventLoopDelay({ resolution: 10 });
  let heldMs = 0;
  let lastWall = performance.now();
  let lastCpu = process.cpuUsage();
  const ticker = setInterval(() => {
    const wall = performance.now();
    const cpu = process.cpuUsage();
    const cpuMs = (cpu.user - lastCpu.user + cpu.system - lastCpu.system) / 1000;
    heldMs = Math.max(heldMs, Math.min(wall - lastWall, cpuMs));
    lastWall = wall;
    lastCpu = cpu;
  }, 5);
  delay.enable();
  const started = performance.now();
  try {
    const result = await work();
    return { result, stall: { heldMs, delayMaxMs: delay.max / 1e6, tookMs: performance.now() - started } };
  } finally {
    delay.disable();
    clearInterval(ticker);
  }
}
