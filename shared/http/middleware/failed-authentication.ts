import type { Deps } from '../../domain/deps';
import { Failure } from '../../model/errors';
import { limitFailedAuthentication } from '../flood-guard';
import type { Event } from './state';

/**
 * Runs a request's authentication; a failure (401) is counted against its source address, and past that address's
 * limit answers 429 instead (with that limit's own headers, which take precedence over an account's windows).
 */
export async function limitingFailures<T>(deps: Deps, event: Event, authentication: Promise<T>): Promise<T> {
  try {
    return await authentication;
  } catch (error) {
    if (!(error instanceof Failure) || error.kind !== 'unauthenticated') throw error;
    throw await limitFailedAuthentication(deps, event, error);
  }
}
