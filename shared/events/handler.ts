import type * as z from 'zod';

/** A message or record that does not parse: it never will, so it is not worth another attempt of its own. */
export class MalformedMessageError extends Error {
  override readonly name = 'MalformedMessageError';
}

/**
 * The body of a queue message (JSON) parsed with its schema; MalformedMessageError (naming where and how it failed,
 * never the values, which may hold customers' data) when it does not parse.
 */
export function parseMessage<T extends z.ZodType>(schema: T, body: string): z.output<T> {
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch {
    throw new MalformedMessageError('the message body is not JSON');
  }
  const parsed = schema.safeParse(json);
  if (!parsed.success) {
    const where = parsed.error.issues.map((issue) => `${issue.path.map(String).join('.') || '(root)'}: ${issue.code}`).join('; ');
    throw new MalformedMessageError(`the message does not parse: ${where}`);
  }
  return parsed.data;
}
