import ipaddr from 'ipaddr.js';

/** Where `vps ssh` connects, as the service described the instance. */
export interface SshDestination {
  readonly user: unknown;
  readonly address: unknown;
  readonly port: unknown;
}

/** A POSIX user name (as useradd takes it, without a trailing $): nothing ssh could read as an option or a host. */
const USER_NAME = /^[a-z_][a-z0-9_-]{0,31}$/;

/**
 * The arguments for ssh. The service's answer is not trusted to be shaped as documented (it may be intercepted or
 * hostile): each value is parsed first, and `--` ends ssh's options before `user@address`, so none of it can be read
 * as an option such as `-oProxyCommand`, which runs a command here. `extra` is the user's own, after the destination.
 */
export function sshArguments(destination: SshDestination, identity: string | undefined, extra: readonly string[]): string[] {
  const { user, address, port } = destination;
  if (typeof user !== 'string' || !USER_NAME.test(user))
    throw new Error('the service answered a root_user that is not a user name; ssh was not run');
  if (typeof address !== 'string' || !ipaddr.IPv4.isValidFourPartDecimal(address))
    throw new Error('the service answered an ipv4 that is not an IPv4 address; ssh was not run');
  if (typeof port !== 'number' || !Number.isInteger(port) || port < 1 || port > 65_535)
    throw new Error('the service answered an ssh_port that is not a port; ssh was not run');
  return [
    ...(identity === undefined ? [] : ['-i', identity, '-o', 'IdentitiesOnly=yes']),
    '-p',
    String(port),
    '--',
    `${user}@${ipaddr.IPv4.parse(address).toString()}`,
    ...extra,
  ];
}
