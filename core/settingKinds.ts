import { z } from 'zod';

/** The kinds of value Quire's settings take, shared by core/config.ts and its parts. */

/** An integer setting within its bounds, with its default. */
export const intFrom = (min: number, max: number, fallback: number) =>
  z.coerce.number().int().min(min).max(max).default(fallback);

/** Surrounding blanks ignored; blank is unset. */
export const trimmedOptional = z
  .string()
  .optional()
  .transform((value) => value?.trim() || undefined);
