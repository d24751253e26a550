import { createHash } from 'node:crypto';
import { isPrintableAscii } from './ssh-keys';

/** DigitalOcean's limit on a server's user data, which holds the service's part and the customer's. */
export const SERVER_USER_DATA_MAX_BYTES = 64 * 1024;

/**
 * The service's cloud-config: the root password and the authorized key the create response promised, each one YAML
 * double-quoted scalar. Both are printable ASCII (checked again here), which JSON quoting escapes so that no YAML or
 * shell reading can split them into another line or key.
 */
export function credentialsCloudConfig(instanceId: number, publicKey: string, rootPassword: string): string {
  if (!isPrintableAscii(rootPassword) || !isPrintableAscii(publicKey)) {
    throw new Error(`instance ${instanceId} has credentials that cannot be written into user data safely`);
  }
  return [
    '#cloud-config',
    'ssh_pwauth: true',
    'disable_root: false',
    'chpasswd:',
    '  expire: false',
    '  users:',
    `    - {name: root, password: ${JSON.stringify(rootPassword)}, type: text}`,
    'users:',
    '  - name: root',
    '    ssh_authorized_keys:',
    `      - ${JSON.stringify(publicKey)}`,
    '',
  ].join('\n');
}

/** cloud-init's part types, by the first line of a part (its "user data formats"). */
const PART_TYPES: readonly [string, string][] = [
  ['#cloud-config', 'text/cloud-config'],
  ['#cloud-boothook', 'text/cloud-boothook'],
  ['#include', 'text/x-include-url'],
  ['#part-handler', 'text/part-handler'],
  ['## template: jinja', 'text/jinja2'],
  ['#!', 'text/x-shellscript'],
];

const partTypeOf = (userData: string) => PART_TYPES.find(([start]) => userData.startsWith(start))?.[1] ?? 'text/plain';

/**
 * A server's user data: the service's cloud-config alone, or with the customer's user data as a second part of a
 * MIME multipart document, which cloud-init runs in order. A customer's cloud-config is merged into the service's
 * (lists appended, keys kept), so that it adds users and keys rather than replacing root's.
 */
export function serverUserData(credentials: string, customer: string | undefined): string {
  if (customer === undefined) return credentials;
  // Derived from the content, so that the same create always sends the same document; never inside either part.
  const boundary = `==vps-${createHash('sha256').update(credentials).update(customer).digest('hex').slice(0, 24)}==`;
  const part = (type: string, body: string, extra: string[] = []) =>
    [`--${boundary}`, `Content-Type: ${type}; charset="utf-8"`, 'MIME-Version: 1.0', ...extra, '', body].join('\n');
  const customerType = partTypeOf(customer);
  return [
    `Content-Type: multipart/mixed; boundary="${boundary}"`,
    'MIME-Version: 1.0',
    '',
    part('text/cloud-config', credentials),
    part(
      customerType,
      customer,
      customerType === 'text/cloud-config' ? ['Merge-Type: list(append)+dict(no_replace,recurse_list)+str()'] : [],
    ),
    `--${boundary}--`,
    '',
  ].join('\n');
}
