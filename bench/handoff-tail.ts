// The turn hand-off's tail, for comparing two checkouts back to back (BENCHMARKS.md): one run of
// `runHandoffBench` printing the percentiles from p50 to the max, the p99 of each half of the
// run (the first half holds the warm-up) with the server CPU of the whole run and of the second
// half, and the 20 slowest hand-offs by position, which tells a
// one-off stall (a module load, a major GC) from a tail spread over the run.
//   HO_N=1500 npx tsx bench/handoff-tail.ts      (at most 1,998: the room stops after 999 rounds)
// Server flags for profiling go through BENCH_SERVER_NODE_ARGS (bench/util.ts), for example
// BENCH_SERVER_NODE_ARGS="--cpu-prof --cpu-prof-dir=/tmp/prof"; BENCH_SERVER_STDOUT=FILE keeps the
// server's stdout (its log, or V8 traces such as --trace-deopt) instead of dropping it.
import { runHandoffBench } from './handoff.js';

const h = await runHandoffBench(Number(process.env.HO_N ?? 1500));
const sorted = (values: number[]): number[] => [...values].sort((a, b) => a - b);
const at = (values: number[], p: number): string => values[Math.min(values.length - 1, Math.floor((p / 100) * values.length))]!.toFixed(2);
const all = sorted(h.samples);
const half = Math.floor(h.samples.length / 2);
console.log(
  'RESULT ' +
    JSON.stringify({
      p50: at(all, 50),
      p90: at(all, 90),
      p95: at(all, 95),
      p98: at(all, 98),
      p99: at(all, 99),
      p995: at(all, 99.5),
      max: at(all, 100),
      firstHalfP99: at(sorted(h.samples.slice(0, half)), 99),
      secondHalfP99: at(sorted(h.samples.slice(half)), 99),
      serverCpuMs: h.serverCpuMsPerHandoff,
      secondHalfCpuMs: h.serverCpuMsPerHandoffSecondHalf,
    }),
);
const slowest = h.samples.map((ms, i) => [i, ms] as const).sort((a, b) => b[1] - a[1]).slice(0, 20);
console.log('SLOWEST ' + slowest.map(([i, ms]) => `#${i} ${ms.toFixed(1)} ms`).join(', '));
process.exit(0);
