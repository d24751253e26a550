/** Money as the service counts it: integer micro-dollars, shown as dollars and cents. */

/** Micro-dollars as dollars and cents; half a cent rounds away from zero. */
export function microsToUsd(micros: number): string {
  const cents = Math.floor((Math.abs(micros) + 5_000) / 10_000);
  return `${micros < 0 && cents > 0 ? '-' : ''}${Math.floor(cents / 100)}.${String(cents % 100).padStart(2, '0')}`;
}

/** Whole cents only, converted without floating-point drift. */
export function usdToMicros(usd: string): number {
  const match = /^(\d{1,9})(?:\.(\d{1,2}))?$/.exec(usd.trim());
  if (!match) throw new Error(`not an amount in dollars and cents: ${usd}`);
  return Number(match[1]) * 1_000_000 + Number((match[2] ?? '').padEnd(2, '0')) * 10_000;
}
