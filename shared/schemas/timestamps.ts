import * as z from 'zod';

/** An ISO 8601 instant in UTC, as `Date.prototype.toISOString` writes it; documented as `format: date-time`. */
export const timestampSchema = z.iso.datetime();
