import { sshArguments } from '../../clients/cli/ssh';

/** Where an instance is, as a well-behaved service answers it. */
const answered = { user: 'root', address: '203.0.113.7', port: 22 };

describe('sshArguments', () => {
  it('ends the options with -- before user@address, and puts the user’s own arguments after it', () => {
    const args = sshArguments(answered, '/home/me/.ssh/vps-42', ['uptime']);

    expect(args).toEqual(['-i', '/home/me/.ssh/vps-42', '-o', 'IdentitiesOnly=yes', '-p', '22', '--', 'root@203.0.113.7', 'uptime']);
  });

  it('leaves the identity to the SSH agent when none is given', () => {
    expect(sshArguments({ ...answered, user: 'ubuntu', port: 2222 }, undefined, [])).toEqual(['-p', '2222', '--', 'ubuntu@203.0.113.7']);
  });

  it.each([
    ['an ssh option', '-oProxyCommand=touch /tmp/owned'],
    ['a second destination', 'root@198.51.100.1'],
    ['a shell command', 'root;id'],
    ['a space', 'root x'],
    ['an upper-case letter', 'Root'],
    ['a leading digit', '0day'],
    ['33 characters', 'a'.repeat(33)],
    ['an empty name', ''],
    ['not text', ['root']],
  ])('refuses a root_user that is %s', (_, user) => {
    expect(() => sshArguments({ ...answered, user }, undefined, [])).toThrow(
      new Error('the service answered a root_user that is not a user name; ssh was not run'),
    );
  });

  it.each([
    ['an ssh option', '-oProxyCommand=touch /tmp/owned'],
    ['a host name', 'evil.example.com'],
    ['a short form', '127.1'],
    ['written with leading zeros', '203.000.113.7'],
    ['an IPv6 address', '::1'],
    ['an address and a port', '203.0.113.7:22'],
    ['no address', null],
  ])('refuses an ipv4 that is %s', (_, address) => {
    expect(() => sshArguments({ ...answered, address }, undefined, [])).toThrow(
      new Error('the service answered an ipv4 that is not an IPv4 address; ssh was not run'),
    );
  });

  it.each([
    ['text with an option', '22 -oProxyCommand=id'],
    ['zero', 0],
    ['above 65535', 65_536],
    ['a fraction', 22.5],
  ])('refuses an ssh_port that is %s', (_, port) => {
    expect(() => sshArguments({ ...answered, port }, undefined, [])).toThrow(
      new Error('the service answered an ssh_port that is not a port; ssh was not run'),
    );
  });
});
