/**
 * Billing by segments, as pure code. An instance is billed over a chain of segments, each at one rate: every change
 * of rate (power off or on, resize, billing pause, delete, a drift followed, the server found gone) closes the open
 * segment at the old rate and opens the next, in the same write as the change, which also books the closed segment's
 * last piece on the ledger and moves the account's checkpoint (shared/model/burn.ts).
 */
import * as z from './zod';
import { hourlyMicros } from './flavors';

const HOUR_MS = 3_600_000;

export const billingSegmentSchema = z.object({
  start: z.string(),
  /** Null while the segment is open: the instance is billed at this rate now. */
  end: z.string().nullable(),
  /** The plan's hourly price when the segment opened, in micro-dollars. */
  hourly_micros: z.number().int(),
  /** Quarters of the hourly price: 4 while running, 1 while stopped (by its owner or by billing). */
  quarters: z.union([z.literal(1), z.literal(4)]),
});
export type BillingSegment = z.infer<typeof billingSegmentSchema>;

/** The facts of an instance that decide its rate. */
export interface BilledState {
  readonly plan: { readonly hourly_price: number | null };
  readonly paused_by: 'user' | 'billing' | null;
  /** Set at activation: billing runs from there. */
  readonly metered_until: string | null;
  readonly deleted_at: string | null;
  readonly billing_ends_at: string | null;
  readonly billing_segments: readonly BillingSegment[];
}

type Rate = Pick<BillingSegment, 'hourly_micros' | 'quarters'>;

/** What the instance is billed per hour now, or null when it is not billed (not yet active, deleted, lost). */
function rateOf(state: Omit<BilledState, 'billing_segments'>): Rate | null {
  if (state.metered_until === null || state.deleted_at !== null || state.billing_ends_at !== null) return null;
  return { hourly_micros: hourlyMicros(state.plan), quarters: state.paused_by === null ? 4 : 1 };
}

const sameRate = (a: Rate | null, b: Rate | null) => a?.hourly_micros === b?.hourly_micros && a?.quarters === b?.quarters;

/** The stored segments; an instance billed before segments were kept has one open segment from `metered_until`. */
export function segmentsOf(state: BilledState): readonly BillingSegment[] {
  if (state.billing_segments.length > 0 || state.metered_until === null) return state.billing_segments;
  const rate = rateOf(state);
  return rate ? [{ start: state.metered_until, end: null, ...rate }] : [];
}

/** How a change moves the instance's billing: the open segment closes at `closesAt`, and `opens` (if any) follows it. */
export interface RateChange {
  /** When the open segment closes (null when none was open). */
  readonly closesAt: string | null;
  readonly opens: BillingSegment | null;
}

/**
 * What a change does to the instance's rate, or undefined when it leaves the rate as it is. The open segment closes
 * when the change takes effect: at the deletion, at the last sighting of a lost server, otherwise now; never before
 * it opened. The next segment opens where it closed; billing that starts (activation) starts at `metered_until`, and
 * billing that had ended and resumes (a server taken for lost, found again) starts now: the time between is not billed.
 */
export function rateChangeOf(before: BilledState, after: Omit<BilledState, 'billing_segments'>, nowIso: string): RateChange | undefined {
  const oldRate = rateOf(before);
  const newRate = rateOf(after);
  if (sameRate(oldRate, newRate)) return undefined;
  const open = segmentsOf(before).find((segment) => segment.end === null);
  const changedAt = after.deleted_at ?? after.billing_ends_at ?? nowIso;
  const closesAt = open ? (changedAt < open.start ? open.start : changedAt) : null;
  const opensAt = closesAt ?? (before.billing_ends_at !== null ? nowIso : (after.metered_until ?? nowIso));
  return { closesAt, opens: newRate ? { start: opensAt, end: null, ...newRate } : null };
}

/**
 * Instances metered by the old per-period meter sit in its sparse index (`meter_shard` = `meter#<id mod 16>`) until
 * they move to their account's checkpoint; nothing enters it any more.
 */
export const LEGACY_METER_SHARDS = 16;

export const legacyMeterShardOf = (shard: number) => `meter#${shard}`;

/** What a segment costs from its start to `atMs`: integer micro-dollars, half a micro-dollar rounds up. */
export function costSince(segment: BillingSegment, atMs: number): number {
  return Math.round((segment.hourly_micros * segment.quarters * (atMs - Date.parse(segment.start))) / (HOUR_MS * 4));
}

/** One segment's share of a charge. */
export interface ChargedPiece extends BillingSegment {
  readonly from: string;
  readonly to: string;
  readonly amount: number;
}

/**
 * The pieces of segments between `fromIso` and `untilMs`, each priced as the difference of the segment's cost at its
 * two ends, so the pieces of a segment charged over many runs add up to exactly what the whole segment costs.
 */
export function chargedPieces(segments: readonly BillingSegment[], fromIso: string, untilMs: number): ChargedPiece[] {
  const fromMs = Date.parse(fromIso);
  return segments.flatMap((segment) => {
    const startMs = Math.max(Date.parse(segment.start), fromMs);
    const endMs = Math.min(segment.end === null ? untilMs : Date.parse(segment.end), untilMs);
    if (endMs <= startMs) return [];
    const amount = costSince(segment, endMs) - costSince(segment, startMs);
    return [{ ...segment, from: new Date(startMs).toISOString(), to: new Date(endMs).toISOString(), amount }];
  });
}
