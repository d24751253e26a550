import * as z from './zod';

/** An ISO 8601 instant in UTC, as `Date.prototype.toISOString` writes it (the stored form of every validated time). */
export const isoInstant = z.iso.datetime();
