// Cost checks without wall-clock limits (issue 42): how the time of some work grows with its
// input, as a ratio measured on this machine, so a slow or busy machine does not fail it and a
// fast one does not hide a quadratic blow-up. Absolute timings belong in bench/.

/** Milliseconds of the fastest of `runs` runs of `work` (the run least disturbed by the rest of the machine). */
export function fastestMs(work: () => unknown, runs = 5): number {
  let best = Infinity;
  for (let i = 0; i < runs; i++) {
    const started = performance.now();
    work();
    best = Math.min(best, performance.now() - started);
  }
  return best;
}

/**
 * How many times more one pass over the whole `input` costs than `parts` passes over its first
 * 1/parts: the same number of characters either way, so about 1 when the work is linear in
 * the input, about `parts` when it is quadratic.
 */
export function growthRatio(work: (input: string) => unknown, input: string, parts = 10): number {
  const piece = input.slice(0, Math.ceil(input.length / parts));
  work(input); // warm up
  const whole = fastestMs(() => work(input));
  const pieces = fastestMs(() => {
    for (let i = 0; i < parts; i++) work(piece);
  });
  return whole / Math.max(pieces, Number.EPSILON);
}
