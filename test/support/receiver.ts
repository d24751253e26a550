import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';

export interface ReceivedDelivery {
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
  // Tests read arbitrary fields of the event.
  readonly event: any;
  /** Whether the signature verified with the Standard Webhooks reference implementation (and the secret set). */
  readonly verified: boolean;
  /** The status this receiver answered. */
  readonly answered: number;
}

export interface Receiver {
  readonly url: string;
  readonly received: ReceivedDelivery[];
  /** The signing secret to verify with (known once the webhook is registered). */
  secret: string | undefined;
  /** The status to answer the n-th request (1-based); 204 unless told otherwise. */
  answer: (n: number) => number;
  close(): Promise<void>;
}

/** A webhook receiver on loopback that verifies every delivery's signature with the `standardwebhooks` package. */
export async function startReceiver(): Promise<Receiver> {
  const received: ReceivedDelivery[] = [];
  const receiver: Receiver = {
    url: '',
    received,
    secret: undefined,
    answer: () => 204,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const body = Buffer.concat(chunks).toString();
      let verified = false;
      try {
        if (receiver.secret) {
          new Webhook(receiver.secret).verify(body, request.headers as Record<string, string>);
          verified = true;
        }
      } catch {
        verified = false;
      }
      const answered = receiver.answer(received.length + 1);
      received.push({ headers: request.headers, body, event: JSON.parse(body), verified, answered });
      response.writeHead(answered, answered >= 300 && answered < 400 ? { location: `${receiver.url}/moved` } : {}).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  (receiver as { url: string }).url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`;
  return receiver;
}

/** Polls `read` until it gives something other than undefined or false. */
export async function eventually<T>(
  read: () => T | undefined | false | Promise<T | undefined | false>,
  what: string,
  timeoutMs = 20_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
