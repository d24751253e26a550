import * as z from '../model/zod';

/** An ISO 8601 instant in UTC, as `Date.prototype.toISOString` writes it; documented as `format: date-time`. */
export const timestampSchema = z.iso.datetime();
