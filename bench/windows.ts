/** The most entries (ms) in any half-open interval [t, t + windowMs), and where it starts. */
export function busiestWindow(timesMs: readonly number[], windowMs: number): { count: number; fromMs: number } {
  const sorted = [...timesMs].sort((a, b) => a - b);
  let best = { count: 0, fromMs: sorted[0] ?? 0 };
  let end = 0;
  for (let start = 0; start < sorted.length; start++) {
    while (end < sorted.length && sorted[end]! < sorted[start]! + windowMs) end++;
    if (end - start > best.count) best = { count: end - start, fromMs: sorted[start]! };
  }
  return best;
}
