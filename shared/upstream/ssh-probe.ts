import { connect } from 'node:net';

/** Whether a server's SSH answers: the check that makes an instance `active` ("running and reachable by SSH"). */
export interface SshProbe {
  answers(host: string, port: number): Promise<boolean>;
}

/** An SSH server's identification line; it may send other lines before it (RFC 4253, section 4.2). */
const IDENTIFICATION = /^SSH-(2\.0|1\.99)-/m;
/** The RFC's bound on what may precede the identification, and more than any answer this probe needs. */
const MAX_BYTES = 8 * 1024;

/**
 * A TCP connect that reads the server's SSH identification line within `timeoutMs`, then closes without a key
 * exchange. Anything else (refused, reset, closed, silent, another protocol) is "not yet": never an error.
 */
export function tcpSshProbe(timeoutMs: number): SshProbe {
  return {
    answers: (host, port) =>
      new Promise<boolean>((resolve) => {
        let received = '';
        const socket = connect({ host, port, timeout: timeoutMs });
        const timer = setTimeout(() => finish(false), timeoutMs);
        const finish = (answered: boolean) => {
          clearTimeout(timer);
          socket.destroy();
          resolve(answered);
        };
        socket.setEncoding('latin1');
        socket.on('data', (chunk: string) => {
          received += chunk;
          if (IDENTIFICATION.test(received)) finish(true);
          else if (received.length > MAX_BYTES) finish(false);
        });
        socket.on('timeout', () => finish(false));
        socket.on('error', () => finish(false));
        socket.on('close', () => finish(IDENTIFICATION.test(received)));
      }),
  };
}
