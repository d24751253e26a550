/**
 * The account's billing checkpoint, as pure code. An account is billed from events, not ticks: it carries its settled
 * balance (`balance`: the sum of its ledger entries) and, per instance billed now, the open segment and how far it is
 * billed (`burning`). Its burn rate `r` is the sum of those segments' rates; its balance at any moment is the settled
 * balance less what the open segments have cost since they were last billed (`B0 − r·(t − t0)`, summed per segment so
 * that each instance's pieces stay exact to the micro-dollar). Nothing is written while time passes: a change of
 * rate books the closed piece and moves the checkpoint in the change's own transaction, and one statement a day
 * closes the open pieces at midnight UTC so the ledger says what each instance cost that day.
 */
import * as z from './zod';
import { costSince, type BillingSegment, type ChargedPiece, type RateChange } from './billing-segments';
import type { AutoRecharge, BalanceNotice } from './payments';

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;

/** An instance's open segment as its account carries it: the segment (which anchors its cost) and how far it is billed. */
export const burningSegmentSchema = z.object({
  start: z.string(),
  hourly_micros: z.number().int(),
  quarters: z.union([z.literal(1), z.literal(4)]),
  billed_until: z.string(),
});
export type BurningSegment = z.infer<typeof burningSegmentSchema>;

/** The open segments of an account's instances, by instance id. */
export type Burning = Readonly<Record<string, BurningSegment>>;

export interface Checkpoint {
  /** The settled balance, integer micro-dollars: every ledger entry booked so far. */
  readonly balance: number;
  readonly burning: Burning;
}

/** A piece of an instance's segment, booked on the ledger. */
export interface BookedPiece extends ChargedPiece {
  readonly instance_id: number;
}

const segmentOf = (burning: BurningSegment): BillingSegment => ({
  start: burning.start,
  end: null,
  hourly_micros: burning.hourly_micros,
  quarters: burning.quarters,
});

/**
 * The piece of an open segment from where it is billed to `untilMs` (never before it): the difference of the
 * segment's cost at the two ends, so however often a segment is cut, its pieces add up to what the whole costs.
 */
function pieceUntil(instanceId: number, burning: BurningSegment, untilMs: number): BookedPiece {
  const fromMs = Date.parse(burning.billed_until);
  const toMs = Math.max(fromMs, untilMs);
  const segment = segmentOf(burning);
  return {
    ...segment,
    end: new Date(toMs).toISOString(),
    instance_id: instanceId,
    from: burning.billed_until,
    to: new Date(toMs).toISOString(),
    amount: costSince(segment, toMs) - costSince(segment, fromMs),
  };
}

/** What the account's servers cost an hour as they are now, in micro-dollars (fractional: a quarter of a price). */
export function burnRateOf(burning: Burning): number {
  return Object.values(burning).reduce((sum, segment) => sum + (segment.hourly_micros * segment.quarters) / 4, 0);
}

/** The balance at a moment: the settled balance less what the open segments have cost since they were billed. */
export function balanceAt(checkpoint: Checkpoint, atMs: number): number {
  return Object.entries(checkpoint.burning).reduce(
    (balance, [instanceId, segment]) => balance - pieceUntil(Number(instanceId), segment, atMs).amount,
    checkpoint.balance,
  );
}

/** What one change of an instance's rate books and leaves: the closed piece (if any) and the account's open segments. */
export interface Settlement {
  readonly piece: BookedPiece | null;
  readonly burning: Record<string, BurningSegment>;
}

/**
 * The settlement of a change of rate: the instance's open segment is billed to where it closes and leaves the
 * account's open segments; the next one (if any) enters them, billed from where it opens.
 */
export function settle(burning: Burning, instanceId: number, change: RateChange): Settlement {
  const key = String(instanceId);
  const { [key]: open, ...others } = burning;
  const piece = open && change.closesAt !== null ? pieceUntil(instanceId, open, Date.parse(change.closesAt)) : null;
  const opens = change.opens;
  return {
    piece: piece && piece.to > piece.from ? piece : null,
    burning: opens
      ? {
          ...others,
          [key]: { start: opens.start, hourly_micros: opens.hourly_micros, quarters: opens.quarters, billed_until: opens.start },
        }
      : others,
  };
}

/** Midnight UTC at or before a moment. */
const midnightBefore = (atMs: number) => atMs - (((atMs % DAY_MS) + DAY_MS) % DAY_MS);

/**
 * The daily statement's cut: the latest midnight UTC, at or before now, that an open segment is billed from before,
 * or undefined when every open segment is billed since the last midnight.
 */
export function statementCut(burning: Burning, nowMs: number): number | undefined {
  const midnight = midnightBefore(nowMs);
  return Object.values(burning).some((segment) => Date.parse(segment.billed_until) < midnight) ? midnight : undefined;
}

/** Every open segment billed to `untilMs`: the statement's pieces (empty ones left out) and the open segments after. */
export function billAll(burning: Burning, untilMs: number): Settlement & { readonly pieces: BookedPiece[] } {
  const untilIso = new Date(untilMs).toISOString();
  const pieces = Object.entries(burning)
    .map(([instanceId, segment]) => pieceUntil(Number(instanceId), segment, untilMs))
    .filter((piece) => piece.to > piece.from);
  const after = Object.fromEntries(
    Object.entries(burning).map(([id, segment]) => [
      id,
      segment.billed_until < untilIso ? { ...segment, billed_until: untilIso } : segment,
    ]),
  );
  return { piece: null, pieces, burning: after };
}

/** What decides when an account must next be looked at. */
export interface ReviewFacts extends Checkpoint {
  readonly account_id: string;
  readonly billing_paused: boolean;
  readonly balance_notice: BalanceNotice;
  readonly auto_recharge: AutoRecharge | null;
  readonly payment_method_id: string | null;
}

/**
 * When in the hour after midnight UTC an account's statement is booked (the cut is at midnight all the same): spread
 * by its id, so that the day's statements are not all due in one second ahead of a pause.
 */
const statementDelayOf = (accountId: string) => (accountHash(accountId) % 3_600) * 1_000;

/** A stable spread of account ids (the review index's shard, the statement's moment). */
export function accountHash(accountId: string): number {
  let hash = 0;
  for (const char of accountId) hash = (hash * 31 + char.charCodeAt(0)) >>> 0;
  return hash;
}

/** A review that is due now but has nothing to act on waits this long, so a sweep never spins on one account. */
const REVIEW_RETRY_MS = 60_000;

/**
 * When the account must next be reviewed, or null when nothing it runs is billed: the first of the projected
 * exhaustion (`t0 + B0/r`: the billing pause), the runway warnings still to give (24 hours and 1 hour before), the
 * auto-recharge threshold, and the next daily statement (in the hour after the midnight that follows its oldest
 * piece). Moments already past
 * are due now. A paused account is looked at only for its statement (its stopped servers still cost a quarter).
 */
export function reviewAtOf(facts: ReviewFacts, nowMs: number): number | null {
  const rate = burnRateOf(facts.burning);
  if (rate <= 0) return null;
  const balance = balanceAt(facts, nowMs);
  const whenBalanceIs = (micros: number) => nowMs + Math.max(0, Math.ceil(((balance - micros) / rate) * HOUR_MS));
  const exhaustsAt = whenBalanceIs(0);
  const oldestBilled = Math.min(...Object.values(facts.burning).map((segment) => Date.parse(segment.billed_until)));
  const candidates = [midnightBefore(oldestBilled) + DAY_MS + statementDelayOf(facts.account_id)];
  if (!facts.billing_paused) {
    candidates.push(exhaustsAt);
    if (facts.balance_notice === 'none') candidates.push(exhaustsAt - DAY_MS);
    if (facts.balance_notice !== 'below_1h') candidates.push(exhaustsAt - HOUR_MS);
    const recharge = facts.auto_recharge;
    if (recharge?.enabled && facts.payment_method_id !== null) {
      const at = whenBalanceIs(recharge.threshold_micros);
      // At or under the threshold already: a charge is under way or was refused; look again a little later.
      candidates.push(at <= nowMs ? nowMs + REVIEW_RETRY_MS : at);
    }
  }
  return Math.min(...candidates);
}
