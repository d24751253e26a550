import { createServer, type Server } from 'node:net';

/** What a simulated server's sshd sends first; a client reads it before anything else (RFC 4253, section 4.2). */
const SSH_IDENTIFICATION = 'SSH-2.0-OpenSSH_9.6p1 Ubuntu-3ubuntu13.5\r\n';
/** A client that holds its connection open after the identification is let go by then. */
const IDLE_CONNECTION_MS = 5_000;

/**
 * The simulated servers' SSH daemons: one TCP listener per server address (a loopback address of its own, all on one
 * port), open while the server exists. A connection is answered with the SSH identification line when `answers` says
 * the server's sshd is up, and closed at once otherwise (as a server still booting, powered off or with its SSH kept
 * silent by a fault). Only the identification is spoken: a client's key exchange then ends with the connection.
 */
export class SshListeners {
  private readonly listeners = new Map<string, Server>();

  constructor(
    readonly port: number,
    private readonly answers: (address: string) => boolean,
  ) {}

  /** Starts listening on `address`; a failure to bind (the address taken, or not a local one) leaves it silent. */
  open(address: string): void {
    if (this.listeners.has(address)) return;
    const server = createServer((socket) => {
      socket.on('error', () => socket.destroy());
      // What the client sends (its identification, its key exchange) is read and dropped: unread, it would keep the
      // connection from ending, and with it the listener's close.
      socket.resume();
      socket.setTimeout(IDLE_CONNECTION_MS, () => socket.destroy());
      if (this.answers(address)) socket.end(SSH_IDENTIFICATION);
      else socket.destroy();
    });
    server.on('error', (error) => {
      console.error(`simulated SSH on ${address}:${this.port} is not listening:`, error.message);
      this.listeners.delete(address);
    });
    server.listen(this.port, address);
    this.listeners.set(address, server);
  }

  close(address: string): void {
    const server = this.listeners.get(address);
    this.listeners.delete(address);
    server?.close();
  }

  async closeAll(): Promise<void> {
    const servers = [...this.listeners.values()];
    this.listeners.clear();
    await Promise.all(servers.map((server) => new Promise<void>((resolve) => server.close(() => resolve()))));
  }
}
