import { badRequest } from './errors';

export interface Plan {
  readonly flavor: string;
  readonly vcpu: number;
  readonly ram_mb: number;
  readonly disk_gb: number;
  /** USD per hour, as published. Billing uses `hourlyMicros`, never this float. */
  readonly hourly_price: number;
}

const plan = (flavor: string, vcpu: number, ramGb: number, diskGb: number, hourlyPrice: number): Plan => ({
  flavor,
  vcpu,
  ram_mb: ramGb * 1024,
  disk_gb: diskGb,
  hourly_price: hourlyPrice,
});

/** The flavor catalog offered for create and resize. */
export const catalog: ReadonlyMap<string, Plan> = new Map(
  [
    plan('s-1vcpu-2gb', 1, 2, 30, 0.01786),
    plan('s-2vcpu-2gb', 2, 2, 35, 0.02679),
    plan('s-2vcpu-4gb', 2, 4, 40, 0.03571),
    plan('s-4vcpu-8gb', 4, 8, 80, 0.07143),
    plan('s-8vcpu-16gb', 8, 16, 160, 0.14286),
    plan('s-16vcpu-32gb', 16, 32, 320, 0.28571),
  ].map((p) => [p.flavor, p]),
);

export const flavorIds = [...catalog.keys()];

/** Known upstream flavors we refuse for good, with the spec's own text. */
const permanentlyUnavailable = new Set(['s-1vcpu-1gb']);

/** Why a flavor that is not in the catalog is refused, in the spec's words. */
export function flavorRefusal(flavor: string): string {
  return permanentlyUnavailable.has(flavor) ? `Flavor ${flavor} is permanently unavailable` : `Invalid flavor: ${flavor}`;
}

/** The plan of an orderable flavor, or the spec's 400 for an unknown or retired one. */
export function orderablePlan(flavor: string): Plan {
  const found = catalog.get(flavor);
  if (!found) throw badRequest(flavorRefusal(flavor));
  return found;
}

/** Hourly price in integer micro-dollars, so that no float ever touches a balance. */
export function hourlyMicros(plan: { readonly hourly_price: number | null }): number {
  return Math.round((plan.hourly_price ?? 0) * 1_000_000);
}
