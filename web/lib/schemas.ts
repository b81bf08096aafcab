import { LINE_STATES } from '@quire/core/annotation';
import { QUIRE_EVENT_TYPES } from '@quire/core/cloudevents';
import { jobRequestFields, jsonObject, languageTag } from '@quire/core/jobRequest';
import { MEDIA_KINDS, RECORDING_RETENTIONS } from '@quire/core/media';
import { JOB_STATUSES } from '@quire/core/temporal';
import { MAX_LINE_CHARS } from '@quire/core/text';
import { DELIVERY_STATUSES } from '@quire/core/webhookStatus';
import { z } from 'zod';

/**
 * The request schemas of `/api/v1`: route handlers validate with them, and web/lib/openapi.ts
 * turns the same objects into the OpenAPI document, so the two cannot drift apart.
 * Shape errors are 400; what only the domain can judge (a provider, a page kind) is 422.
 */

export const jobStatusSchema = z.enum(JOB_STATUSES);

export const pageSizeSchema = z.coerce
  .number()
  .int()
  .min(1)
  .max(100)
  .default(50)
  .describe('Items per page (default 50, at most 100).');
export const pageTokenSchema = z
  .string()
  .min(1)
  .max(2048)
  .describe('Opaque token from `nextPageToken`, valid only with the same workspace and filter.');

const positiveIntParam = z.coerce.number().int().positive();

export const startJobBody = z
  .object({
    pageId: z.number().int().positive(),
    ...jobRequestFields,
  })
  .strict();

export const listJobsQuery = z.object({
  status: jobStatusSchema.optional(),
  pageId: positiveIntParam.optional(),
  batchId: z.string().min(1).max(100).optional(),
  pageSize: pageSizeSchema,
  pageToken: pageTokenSchema.optional(),
});

const box = z.object({
  x: z.number().min(0),
  y: z.number().min(0),
  w: z.number().positive(),
  h: z.number().positive(),
});

export const segmentSchema = z
  .object({
    index: z.number().int().min(0),
    target: z.discriminatedUnion('kind', [
      z.object({ kind: z.literal('xywh'), box }).strict(),
      z.object({ kind: z.literal('t'), start: z.number().min(0), end: z.number().min(0) }).strict(),
    ]),
    text: z.string().max(MAX_LINE_CHARS),
    speaker: z.string().min(1).max(200).optional(),
    confidence: z.number().min(0).max(1).optional(),
    stamp: z
      .object({
        state: z.enum(LINE_STATES),
        by: z.object({ kind: z.string().max(50), id: z.string().max(200) }).strict(),
        at: z.string().max(50),
      })
      .strict()
      .optional()
      .describe(
        'V1: read-only. A line keeps its state when its text, place and speaker are unchanged and becomes `edited` otherwise; a stamp sent here is ignored.',
      ),
  })
  .strict();

export const pageEditBody = z
  .object({
    segments: z.array(segmentSchema).max(5_000),
    language: languageTag.optional(),
  })
  .strict();

/** V6: the settings a workspace's key may change. */
export const workspaceSettingsBody = z
  .object({ recordingRetention: z.enum(RECORDING_RETENTIONS) })
  .strict();

/** V1: the lines of the revision read that the caller confirms. */
export const pageVerifyBody = z
  .object({ lines: z.array(z.number().int().min(0)).min(1).max(5_000) })
  .strict();

/** V2: the review queue of the workspace, or of one item. */
export const reviewQuery = z.object({
  itemId: z.string().min(1).max(200).optional().describe('Only the lines of this item.'),
  includeImported: z
    .enum(['true', 'false'])
    .transform((v) => v === 'true')
    .optional()
    .describe(
      'V10: also the lines imported from a file or a PDF text layer, after every engine line.',
    ),
  pageSize: pageSizeSchema,
  pageToken: pageTokenSchema.optional(),
});

/** V5: progress of the workspace, or of one item. */
export const progressQuery = z.object({
  itemId: z.string().min(1).max(200).optional().describe('Only this item.'),
});

export const revisionsQuery = z.object({
  before: positiveIntParam.optional().describe('Only revisions below this one (paging back).'),
  pageSize: pageSizeSchema,
});

export const exportFormatSchema = z.enum([
  'iiif',
  'text',
  'vtt',
  'srt',
  'alto',
  'page',
  'hocr',
  'pdf',
]);
export const exportQuery = z.object({ format: exportFormatSchema });
/** I7: an item's export; a searchable PDF of its image pages. */
export const itemExportQuery = z.object({ format: z.enum(['pdf']) });

export const publishBody = z.object({ expectedRevision: z.number().int().min(0) }).strict();

export const searchQuery = z.object({
  q: z.string().trim().min(1).max(200),
  limit: z.coerce.number().int().min(1).max(100).default(20),
  collectionId: z.coerce
    .number()
    .int()
    .positive()
    .optional()
    .describe('F3: only items in this collection or below it.'),
  kind: z.enum(MEDIA_KINDS).optional().describe('F3: only pages of this kind.'),
  lineState: z
    .enum(LINE_STATES)
    .optional()
    .describe(
      'F3, V1: only pages where a line in this state holds the words, and only those lines (`verified`: text a person checked).',
    ),
});

export const createWebhookBody = z
  .object({
    url: z
      .string()
      .min(1)
      .max(2048)
      .describe('Absolute https URL without credentials, query or fragment.'),
    // Bytes, not characters, are checked after parsing (core/webhookValidation.ts, 422).
    secret: z
      .string()
      .max(4096)
      .describe('Caller-generated, 32-1024 bytes, no surrounding whitespace; write-only.'),
    eventTypes: z.array(z.enum(QUIRE_EVENT_TYPES)).min(1).max(50).optional(),
  })
  .strict();

export const deliveryStatusSchema = z.enum(DELIVERY_STATUSES);
export const deliveriesQuery = z.object({
  status: deliveryStatusSchema.optional(),
  pageSize: pageSizeSchema,
  pageToken: pageTokenSchema.optional(),
});

export const eventsQuery = z.object({
  lastEventId: z.coerce
    .number()
    .int()
    .min(0)
    .optional()
    .describe('Resume strictly after this outbox id (alternative to the Last-Event-ID header).'),
});

export const errorBody = z.object({
  error: z.object({ code: z.string(), message: z.string() }),
});

export const startedJobResponse = z.object({
  jobId: z.string(),
  workflowId: z.string(),
  status: jobStatusSchema,
  created: z.boolean(),
});

export const jobSummarySchema = z.object({
  id: z.string(),
  pageId: z.number().int(),
  batchId: z.string().nullable(),
  status: jobStatusSchema,
  provider: z.string(),
  stage: z.string().nullable(),
  attemptNumber: z.number().int(),
  completedSegments: z.number().int(),
  failedSegments: z.number().int(),
  totalSegments: z.number().int().nullable(),
  errorCategory: z.string().nullable(),
  createdAt: z.string(),
  updatedAt: z.string(),
});

export const listJobsResponse = z.object({
  jobs: z.array(jobSummarySchema),
  nextPageToken: z.string().nullable(),
});

export const pageResponse = z.object({
  pageId: z.number().int(),
  itemId: z.string(),
  kind: z.enum(MEDIA_KINDS),
  canvasUri: z.string(),
  revision: z.number().int(),
  publishedRevision: z.number().int().nullable(),
  annotationPage: jsonObject,
});

export const webhookResponse = z.object({
  id: z.string(),
  url: z.string(),
  eventTypes: z.array(z.string()).nullable(),
  createdAt: z.string(),
  disabledAt: z.string().nullable(),
  disabledReason: z.string().nullable(),
});
