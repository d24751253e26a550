import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';
import { badRequest } from '../model/errors';

/** What receivers may be: only public addresses in production; the local runtime also allows loopback over http. */
export interface ReceiverPolicy {
  readonly allowLoopback: boolean;
}

export type Resolver = (hostname: string) => Promise<string[]>;

export const resolveAll: Resolver = async (hostname) =>
  (await lookup(hostname, { all: true, verbatim: true })).map((entry) => entry.address);

const cidr = (range: string) => ipaddr.IPv6.parseCIDR(range);
/** Prefixes whose addresses carry an IPv4 address in their last 32 bits. */
const CARRIED_IN_LAST_32_BITS = [
  cidr('::ffff:0:0/96'), // IPv4-mapped
  cidr('::ffff:0:0:0/96'), // IPv4-translated (SIIT)
  cidr('64:ff9b::/96'), // NAT64, well-known prefix
  cidr('64:ff9b:1::/48'), // NAT64, local-use prefix
];
const IPV4_COMPATIBLE = cidr('::/96');
const SIX_TO_FOUR = cidr('2002::/16');
const TEREDO = cidr('2001::/32');

const ipv4Of = (high: number, low: number) => new ipaddr.IPv4([high >> 8, high & 0xff, low >> 8, low & 0xff]);

/**
 * The IPv4 address an IPv6 address carries, which a host, a relay or a translator may connect to in its place:
 * IPv4-mapped and -translated, IPv4-compatible (`::a.b.c.d`, but `::1` is IPv6's own loopback), NAT64, 6to4 (the
 * 32 bits after 2002:), Teredo (the client, the last 32 bits inverted) and ISATAP (`…:0:5efe:a.b.c.d`, or
 * `200:5efe`, under any prefix).
 */
export function carriedIPv4(address: ipaddr.IPv6): ipaddr.IPv4 | undefined {
  const [, sixToFourHigh = 0, sixToFourLow = 0, , isatapFlags = 0, isatapTag = 0, high = 0, low = 0] = address.parts;
  if (address.match(SIX_TO_FOUR)) return ipv4Of(sixToFourHigh, sixToFourLow);
  if (address.match(TEREDO)) return ipv4Of(high ^ 0xffff, low ^ 0xffff);
  if (CARRIED_IN_LAST_32_BITS.some((range) => address.match(range))) return ipv4Of(high, low);
  if (address.match(IPV4_COMPATIBLE) && address.range() !== 'loopback') return ipv4Of(high, low);
  if ((isatapFlags & 0xfdff) === 0 && isatapTag === 0x5efe) return ipv4Of(high, low);
  return undefined;
}

function rangeRefusal(address: ipaddr.IPv4 | ipaddr.IPv6, policy: ReceiverPolicy): string | undefined {
  const range = address.range();
  if (range === 'unicast') return undefined;
  if (range === 'loopback' && policy.allowLoopback) return undefined;
  return range;
}

/**
 * Why an address may not receive webhooks, or undefined when it may. Only globally routable unicast passes:
 * loopback, private, link-local (the 169.254.169.254 metadata service), CGNAT, unique-local (fd00:ec2::254),
 * multicast and reserved are refused. An IPv6 address that carries an IPv4 address is judged as that IPv4 address
 * first, then by its own range: the 6to4, Teredo, NAT64 and translated prefixes stay refused whatever they carry.
 */
export function addressRefusal(address: string, policy: ReceiverPolicy): string | undefined {
  if (!ipaddr.isValid(address)) return 'invalid';
  // An IPv4-mapped address is the IPv4 address itself, as a socket connects to it.
  const parsed = ipaddr.process(address);
  const carried = parsed instanceof ipaddr.IPv6 ? carriedIPv4(parsed) : undefined;
  return (carried && rangeRefusal(carried, policy)) ?? rangeRefusal(parsed, policy);
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
