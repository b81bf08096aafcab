import { METADATA_LIMITS } from '@quire/core/archive';
import { languageTag } from '@quire/core/jobRequest';
import { z } from 'zod';
import { pageSizeSchema, pageTokenSchema } from './schemas';

/**
 * F1/F2: the request schemas of the archive routes (collections, items, page order). Route
 * handlers validate with them and web/lib/archiveOpenapi.ts documents the same objects.
 */

const text = (max: number) => z.string().trim().min(1).max(max);

export const metadataEntries = z
  .array(
    z.object({ label: text(METADATA_LIMITS.label), value: text(METADATA_LIMITS.value) }).strict(),
  )
  .max(METADATA_LIMITS.entries)
  .describe('Label/value pairs in order; the Dublin Core element names are the usual labels.');

const collectionRef = z.number().int().positive().max(Number.MAX_SAFE_INTEGER);

/** V9: what the jobs of an item (or of a collection's items) read with unless asked otherwise. */
const engineChoice = {
  provider: z
    .string()
    .regex(/^[a-z0-9_-]{1,64}$/)
    .nullable()
    .optional()
    .describe('The engine its jobs use unless a request names one; null: inherited.'),
  model: text(128).nullable().optional().describe("The engine's model; null: inherited."),
};

export const createCollectionBody = z
  .object({
    title: text(500),
    description: z.string().max(10_000).nullable().optional(),
    metadata: metadataEntries.optional(),
    parentId: collectionRef.nullable().optional().describe('The parent; none or null: the root.'),
    language: languageTag
      .nullable()
      .optional()
      .describe("V9: the language its items' jobs read in (tesseract codes such as frk too)."),
    ...engineChoice,
  })
  .strict();

export const updateCollectionBody = z
  .object({
    title: text(500).optional(),
    description: z.string().max(10_000).nullable().optional(),
    metadata: metadataEntries.optional(),
    parentId: collectionRef
      .nullable()
      .optional()
      .describe('Move under this collection; null: to the root. Never under itself (409).'),
    language: languageTag
      .nullable()
      .optional()
      .describe("V9: the language its items' jobs read in; null: inherited."),
    ...engineChoice,
  })
  .strict()
  .refine((b) => Object.keys(b).length > 0, 'give at least one field to change');

export const listCollectionsQuery = z.object({
  parentId: z.coerce
    .number()
    .int()
    .positive()
    .optional()
    .describe("The parent whose sub-collections are listed; omitted: the workspace's root."),
  pageSize: pageSizeSchema,
  pageToken: pageTokenSchema.optional(),
});

export const listItemsQuery = z.object({
  collection: z
    .union([z.literal('root'), z.coerce.number().int().positive()])
    .optional()
    .describe('A collection id, or `root` for items in no collection; omitted: every item.'),
  pageSize: pageSizeSchema,
  pageToken: pageTokenSchema.optional(),
});

export const updateItemBody = z
  .object({
    title: z.string().trim().min(1).max(500).nullable().optional(),
    metadata: metadataEntries.optional(),
    language: languageTag
      .nullable()
      .optional()
      .describe(
        'BCP 47 (or a tesseract code such as frk); search matches in this language where PostgreSQL knows it (F3), and its jobs read in it (V9).',
      ),
    ...engineChoice,
    collectionId: collectionRef.nullable().optional().describe('null: to the root.'),
  })
  .strict()
  .refine((b) => Object.keys(b).length > 0, 'give at least one field to change');

export const arrangePagesBody = z
  .object({
    pageIds: z
      .array(z.number().int().positive())
      .max(10_000)
      .describe(
        'Every live page of the item in its new order; pages of other items named here move to this item.',
      ),
  })
  .strict();

/** F8: an item imported from a IIIF Presentation 2 or 3 manifest. */
export const iiifImportBody = z
  .object({
    manifestUrl: z
      .string()
      .min(1)
      .max(2000)
      .describe('The http(s) URL of a IIIF Presentation 2 or 3 manifest.'),
    collectionId: collectionRef.nullable().optional().describe('The collection the item goes in.'),
    title: z
      .string()
      .trim()
      .min(1)
      .max(500)
      .nullable()
      .optional()
      .describe("The item's title; absent: the manifest's label."),
  })
  .strict();
