import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';
import { badRequest } from './errors';

/** What receivers may be: only public addresses in production; the local runtime also allows loopback over http. */
export interface ReceiverPolicy {
  readonly allowLoopback: boolean;
}

export type Resolver = (hostname: string) => Promise<string[]>;

export const resolveAll: Resolver = async (hostname) =>
  (await lookup(hostname, { all: true, verbatim: true })).map((entry) => entry.address);

/**
 * Why an address may not receive webhooks, or undefined when it may. Only globally routable unicast passes:
 * loopback, private, link-local (the 169.254.169.254 metadata service), CGNAT, unique-local (fd00:ec2::254),
 * multicast, reserved and IPv4 embedded in IPv6 (mapped, 6to4, Teredo, NAT64) are all refused.
 */
export function addressRefusal(address: string, policy: ReceiverPolicy): string | undefined {
  if (!ipaddr.isValid(address)) return 'invalid';
  const parsed = ipaddr.process(address);
  const range = parsed.range();
  if (range === 'unicast') return undefined;
  if (range === 'loopback' && policy.allowLoopback) return undefined;
  return range;
}

/** The host as a resolver or an address check wants it (URL keeps IPv6 literals in brackets). */
export const bareHostname = (url: URL) => url.hostname.replace(/^\[(.*)\]$/, '$1');

/**
 * Checks a receiver URL at registration: https (http only where loopback is allowed), no credentials, and a host
 * whose every address may receive. Delivery checks the addresses again on each connection, against rebinding.
 */
export async function checkReceiverUrl(raw: string, policy: ReceiverPolicy, resolve: Resolver = resolveAll): Promise<URL> {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw badRequest('url must be an absolute https URL');
  }
  const schemes = policy.allowLoopback ? ['https:', 'http:'] : ['https:'];
  if (!schemes.includes(url.protocol)) throw badRequest('url must be an absolute https URL');
  if (url.username || url.password) throw badRequest('url must not contain credentials');
  const host = bareHostname(url);
  let addresses: string[];
  try {
    addresses = isIP(host) ? [host] : await resolve(host);
  } catch {
    throw badRequest('url host does not resolve');
  }
  if (addresses.length === 0) throw badRequest('url host does not resolve');
  if (addresses.some((address) => addressRefusal(address, policy) !== undefined)) {
    throw badRequest('url must not point to a loopback, private, link-local or reserved address');
  }
  return url;
}
