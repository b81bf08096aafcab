import { z } from 'zod';

/**
 * What a caller may ask of a new job, the same through the HTTP API (SPEC §7) and the typed
 * Temporal client (SPEC §8): the immutable snapshot is made from these fields.
 */
export const jsonObject = z.record(z.string(), z.unknown());

/** BCP 47: at most 35 characters in practice (RFC 5646 §4.4.1), which bounds what is stored. */
export const languageTag = z
  .string()
  .max(35)
  .regex(/^[a-z]{2,3}(-[A-Za-z0-9]{2,8})*$/, 'a BCP 47 language tag such as en or de-DE');

export const jobRequestFields = {
  provider: z.string().min(1).max(64).optional(),
  model: z.string().min(1).max(128).optional(),
  language: languageTag.optional(),
  options: jsonObject.optional(),
  idempotencyKey: z.string().min(1).max(200).optional(),
  externalReferenceId: z.string().min(1).max(200).optional(),
  metadata: jsonObject
    .refine((m) => JSON.stringify(m).length <= 16_384, 'metadata must be at most 16 KiB of JSON')
    .optional(),
};
