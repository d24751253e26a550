import { connect } from 'node:net';
import { once } from 'node:events';
import { SshListeners } from '../../infra/local/ssh-listeners';
import { freePort } from '../../infra/local/ports';

/** Connects as an SSH client does: sends its own identification and a key exchange, and reads the server's line. */
async function greet(address: string, port: number): Promise<string> {
  const socket = connect(port, address);
  await once(socket, 'connect');
  socket.write('SSH-2.0-OpenSSH_9.6\r\n\u0000\u0000\u0001\u0014key exchange init');
  const [first] = (await once(socket, 'data')) as [Buffer];
  await once(socket, 'close');
  return first.toString('latin1');
}

describe('SshListeners', () => {
  it('answers the identification line and closes even though the client spoke first', async () => {
    const listeners = new SshListeners(await freePort(), () => true);
    listeners.open('127.0.0.1');
    await new Promise((resolve) => setTimeout(resolve, 50));

    const line = await greet('127.0.0.1', listeners.port);
    const closed = await Promise.race([
      listeners.closeAll().then(() => 'closed'),
      new Promise((resolve) => setTimeout(resolve, 3_000, 'still open')),
    ]);

    expect(line).toBe('SSH-2.0-OpenSSH_9.6p1 Ubuntu-3ubuntu13.5\r\n');
    expect(closed).toBe('closed');
  });
});
