import { request as httpRequest, type RequestOptions } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { LookupFunction } from 'node:net';
import { isIP } from 'node:net';
import { addressRefusal, bareHostname, resolveAll, type ReceiverPolicy, type Resolver } from './urls';

export interface SendOutcome {
  /** The receiver's HTTP status, when one came back. */
  readonly status: number | null;
  /** Why no status came back (refused address, timeout, connection error). */
  readonly error: string | null;
}

class RefusedAddressError extends Error {
  override readonly name = 'RefusedAddressError';
}

/**
 * Resolves the host and vets every address at connection time, so that the address connected to is exactly one
 * that was checked: a name re-pointed at a private address after registration (DNS rebinding) is refused.
 */
function guardedLookup(policy: ReceiverPolicy, resolve: Resolver): LookupFunction {
  return (hostname, options, callback) => {
    resolve(hostname).then(
      (addresses) => {
        const refused = addresses.find((address) => addressRefusal(address, policy) !== undefined);
        if (refused || addresses.length === 0) {
          callback(new RefusedAddressError('the receiver resolves to a refused address'), '', 0);
          return;
        }
        const entries = addresses.map((address) => ({ address, family: isIP(address) }));
        if ((options as { all?: boolean }).all) (callback as unknown as (e: null, a: typeof entries) => void)(null, entries);
        else callback(null, entries[0]!.address, entries[0]!.family);
      },
      (error: NodeJS.ErrnoException) => callback(error, '', 0),
    );
  };
}

/**
 * POSTs one signed delivery: no redirects followed (a 3xx is an answer like any other), a hard timeout, and only
 * vetted addresses connected to.
 */
export function postDelivery(
  url: URL,
  body: string,
  headers: Record<string, string>,
  options: { policy: ReceiverPolicy; timeoutMs: number; resolve?: Resolver },
): Promise<SendOutcome> {
  const host = bareHostname(url);
  if (isIP(host) && addressRefusal(host, options.policy) !== undefined) {
    return Promise.resolve({ status: null, error: 'the receiver resolves to a refused address' });
  }
  const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
  const requestOptions: RequestOptions = {
    method: 'POST',
    headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) },
    lookup: guardedLookup(options.policy, options.resolve ?? resolveAll),
    signal: AbortSignal.timeout(options.timeoutMs),
    agent: false,
  };
  return new Promise((resolve) => {
    const outgoing = send(url, requestOptions, (response) => {
      // Only the status matters; drain the body so the socket is released.
      response.resume();
      response.on('end', () => resolve({ status: response.statusCode ?? null, error: null }));
      response.on('error', () => resolve({ status: response.statusCode ?? null, error: null }));
    });
    outgoing.on('error', (error) => {
      const reason =
        error instanceof RefusedAddressError
          ? error.message
          : error.name === 'AbortError' || error.name === 'TimeoutError'
            ? `no answer within ${options.timeoutMs / 1000} s`
            : 'could not connect to the receiver';
      resolve({ status: null, error: reason });
    });
    outgoing.end(body);
  });
}
