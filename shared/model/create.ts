import { forbidden, paymentRequired } from './errors';
import { orderablePlan, type Plan } from './flavors';
import { parsePublicKey, type SshKey } from './ssh-keys';

/** Deploying needs a balance strictly above $3 (micro-dollars). */
const DEPLOY_MIN_BALANCE_MICROS = 3_000_000;

/**
 * The most instances one account may have billed at once: its checkpoint carries each one's open segment (about 100
 * bytes), and DynamoDB's 400 KB item limit must never refuse the write that settles a change of rate.
 */
export const MAX_BILLED_INSTANCES = 2_000;

/** What a deploy asks for, once its body has parsed. */
export interface CreateRequest {
  readonly project_name: string;
  readonly flavor: string;
  readonly ssh_public_key?: string;
}

export interface CreateOrder {
  readonly plan: Plan;
  /** The customer's key, or null when one is to be generated. */
  readonly sshKey: SshKey | null;
  /** The name the key is registered under. */
  readonly keyName: string;
}

/**
 * The checks of a deploy once its body has parsed, in the interface's order: the flavor (400), the SSH key (400),
 * then the balance (402), then the account's instance limit (403). Throws the first that fails; nothing is reserved or
 * recorded before they all pass.
 */
export function judgeCreate(account: { readonly balance: number; readonly billedInstances: number }, request: CreateRequest): CreateOrder {
  const plan = orderablePlan(request.flavor);
  const keyName = `${request.project_name}-key`;
  const sshKey = request.ssh_public_key === undefined ? null : parsePublicKey(request.ssh_public_key, keyName);
  if (account.balance <= DEPLOY_MIN_BALANCE_MICROS) {
    throw paymentRequired('Insufficient balance to deploy: the balance must be above $3.00');
  }
  if (account.billedInstances >= MAX_BILLED_INSTANCES) {
    throw forbidden(`Instance limit reached: an account can have ${MAX_BILLED_INSTANCES.toLocaleString('en-US')} billed instances`);
  }
  return { plan, sshKey, keyName };
}
