import * as z from '../model/zod';
import { badRequest } from '../model/errors';
import { hasUnsafeCharacters } from '../model/text';

type RawIssue = Parameters<Extract<z.core.$ZodErrorMap, (...args: never[]) => unknown>>[0];

const articleFor = (type: string) => (/^[aeiou]/.test(type) ? `an ${type}` : `a ${type}`);

/** One readable sentence per validation problem, naming the field the way the client spelled it. */
function messageFor(issue: RawIssue): string | undefined {
  const field = issue.path?.length ? issue.path.join('.') : undefined;
  switch (issue.code) {
    case 'invalid_type':
      if (!field) return 'Request body must be a JSON object';
      if (issue.input === undefined) return `${field} is required`;
      return `${field} must be ${articleFor(String(issue.expected))}`;
    case 'too_big':
      return `${field} must be at most ${issue.maximum} characters`;
    case 'too_small':
      return `${field} must not be empty`;
    case 'custom':
      return issue.params?.unsafeText
        ? `${field} must not contain control characters, bidirectional overrides or unpaired surrogates`
        : undefined;
    case 'invalid_value':
      if (field && issue.input === undefined) return `${field} is required`;
      return field ? `${field} must be one of ${issue.values.join(', ')}` : undefined;
    case 'unrecognized_keys':
      return `Unknown field${issue.keys.length > 1 ? 's' : ''}: ${issue.keys.join(', ')}`;
    default:
      return undefined;
  }
}

/** A name people read (a project, a key): trimmed, 1 to `max` characters, none that could rewrite what they see. */
export const displayName = (max: number) =>
  z
    .string()
    .trim()
    .min(1)
    .max(max)
    .refine((name) => !hasUnsafeCharacters(name), { params: { unsafeText: true } });

/** Parses with the schema or throws the 400 for the first problem found. */
export function parseOrBadRequest<T extends z.ZodType>(schema: T, input: unknown): z.output<T> {
  const result = schema.safeParse(input, { error: messageFor });
  if (result.success) return result.data;
  throw badRequest(result.error.issues[0]?.message ?? 'Invalid request');
}
