/** A mistake in how the command was called: exit code 2, nothing was sent. */
export class UsageError extends Error {
  override name = 'UsageError';
}

/** A name that names no instance, or several: the service answered, so this is not bad usage (exit 1). */
export class InstanceLookupError extends Error {
  override readonly name = 'InstanceLookupError';
}

/** A program the CLI ran (ssh) ended with this exit code, which the CLI ends with too; it has said what it had to say. */
export class ChildExit extends Error {
  override readonly name = 'ChildExit';
  constructor(readonly code: number) {
    super(`exited ${code}`);
  }
}
