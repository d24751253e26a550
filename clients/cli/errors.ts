/** A mistake in how the command was called: exit code 2, nothing was sent. */
export class UsageError extends Error {
  override name = 'UsageError';
}
