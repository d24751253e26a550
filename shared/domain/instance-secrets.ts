import type { Deps } from './deps';
import * as z from '../model/zod';
import { open, seal, type SecretContext } from '../secrets';
import type { Instance } from '../model/instance';

/** What an instance's owner is shown on every read, and what must never be stored in clear. */
const instanceSecretsSchema = z.object({
  root_password: z.string(),
  /** The generated private key; null when the customer brought their own public key. */
  private_key: z.string().nullable(),
});
export type InstanceSecrets = z.infer<typeof instanceSecretsSchema>;

type InstanceIds = Pick<Instance, 'account_id' | 'instance_id'>;

/** Binds the sealed secrets to their account and instance: copied onto another record, they do not open. */
const contextOf = ({ account_id, instance_id }: InstanceIds): SecretContext => ({
  purpose: 'instance-secrets',
  account_id,
  instance_id: String(instance_id),
});

export async function sealInstanceSecrets(deps: Deps, ids: InstanceIds, secrets: InstanceSecrets): Promise<string> {
  return seal(deps, JSON.stringify(secrets), contextOf(ids));
}

/** The instance's secrets, or null once they were removed (a failed or deleted instance). */
export async function openInstanceSecrets(deps: Deps, item: Instance): Promise<InstanceSecrets | null> {
  if (item.sealed_secrets === null) return null;
  return instanceSecretsSchema.parse(JSON.parse(await open(deps, item.sealed_secrets, contextOf(item))));
}

/** The user data is bound to its instance like the credentials, under a purpose of its own. */
const userDataContext = ({ account_id, instance_id }: InstanceIds): SecretContext => ({
  purpose: 'instance-user-data',
  account_id,
  instance_id: String(instance_id),
});

export async function sealUserData(deps: Deps, ids: InstanceIds, userData: string): Promise<string> {
  return seal(deps, userData, userDataContext(ids));
}

/** The customer's user data, or undefined when none was given (or it is gone). */
export async function openUserData(deps: Deps, item: Instance): Promise<string | undefined> {
  return item.sealed_user_data === null ? undefined : await open(deps, item.sealed_user_data, userDataContext(item));
}
