import { z } from 'zod';
import { ARCHIVE_OPERATIONS } from './archiveOpenapi';
import type { JsonSchema, Operation } from './openapiOperation';
import { OPERATOR_OPERATIONS } from './operatorOpenapi';
import {
  createWebhookBody,
  deliveriesQuery,
  errorBody,
  eventsQuery,
  exportQuery,
  itemExportQuery,
  listJobsQuery,
  listJobsResponse,
  pageEditBody,
  pageResponse,
  pageVerifyBody,
  progressQuery,
  publishBody,
  reviewQuery,
  revisionsQuery,
  searchQuery,
  startedJobResponse,
  startJobBody,
  webhookResponse,
  workspaceSettingsBody,
} from './schemas';

/**
 * The OpenAPI 3.1 document of `/api/v1`, generated from the zod schemas the handlers validate
 * with (web/lib/schemas.ts). A test checks that every route file under web/app/api/v1 is here
 * with each method it exports, and that sample requests the handlers accept validate against
 * the documented bodies.
 */

const ws = '/workspaces/{ws}';
const errors = (codes: number[]) =>
  Object.fromEntries(
    codes.map((c) => [String(c), { description: ERROR_TEXT[c] ?? 'error', schema: errorBody }]),
  );
/**
 * R6: a path id holding NUL or a lone surrogate (or, for items, bad percent-encoding) is a 400
 * `invalid_path` on every route with ids in its path (web/lib/api.ts `checkPathParams`).
 */
function withPathRefusal(op: Operation): Operation['responses'] {
  if (!/\{(?!ws\})[^}]+\}/.test(op.path) || op.responses['400']) return op.responses;
  return { ...op.responses, ...errors([400]) };
}

const ERROR_TEXT: Record<number, string> = {
  400: 'malformed JSON, parameters or page token; text holding NUL or a lone surrogate (`invalid_text`, `invalid_path`, `invalid_query`); a path whose percent-encoding does not decode (`invalid_path`); JSON nested more than 64 levels (`json_too_deep`)',
  401: 'missing or invalid API key',
  404: 'not found in this workspace',
  409: 'conflict with the current state',
  412: 'the page moved on since the If-Match revision (`stale_revision`, with `currentRevision`)',
  413: "body too large, or a page's lines beyond 150,000 bytes of text in all (`page_text_too_large`)",
  415: 'body is not application/json',
  422: 'well-formed but not acceptable (an unknown job option is `unknown_option`, naming it)',
  428: 'If-Match is required',
  429: 'too many open streams for this key or workspace',
  503: 'Temporal does not answer',
};

export const OPERATIONS: Operation[] = [
  {
    method: 'get',
    path: ws,
    summary: 'The workspace of the key',
    tag: 'workspaces',
    responses: { '200': { description: 'workspace' }, ...errors([401, 404]) },
  },
  {
    method: 'patch',
    path: ws,
    summary:
      'V6: the workspace settings: `recordingRetention` (`keep`, the default, or `delete-after-recognition`), audited',
    tag: 'workspaces',
    body: workspaceSettingsBody,
    responses: { '200': { description: 'workspace' }, ...errors([400, 401, 415, 422]) },
  },
  {
    method: 'post',
    path: `${ws}/batches`,
    summary: 'Ingest files: items, pages and one job per page (U1-U4)',
    tag: 'batches',
    rawBody: {
      mediaType: 'multipart/form-data',
      schema: {
        type: 'object',
        properties: {
          'files[]': {
            type: 'array',
            items: { type: 'string', contentMediaType: 'application/octet-stream' },
            description:
              'Images (PNG, JPEG, TIFF, WebP), recordings (WAV, FLAC, MP3, OGG, M4A) and, I5, PDFs and multi-page TIFFs: one page per PDF page (a page that is one scanned image at the pixels of that image, I9; any other page rendered at QUIRE_PDF_DPI) or TIFF frame, in order, in one item. A PDF page with a text layer gets it as revision 1 (source import, format pdf) and no job. Refused with too_many_pages, image_too_large (a page above the pixel limit), document_encrypted or malformed_media, storing nothing.',
          },
          itemId: { type: 'string' },
          externalReferenceId: { type: 'string' },
          idempotencyKey: { type: 'string' },
          metadata: { type: 'string', description: 'JSON object' },
          provider: { type: 'string', description: 'V9: the engine; kept on the new items' },
          model: { type: 'string', description: "V9: the engine's model; kept on the new items" },
          language: {
            type: 'string',
            description:
              'V9: the language its jobs read in (en, de, or a tesseract code such as frk); one without an installed model is refused with 422 model_not_installed, starting nothing. Kept on the new items; absent: the item’s or its collection’s.',
          },
          collectionId: { type: 'string', description: 'F5: the collection new items go in' },
          title: { type: 'string', description: 'F5: the title of the one new item' },
          descriptiveMetadata: {
            type: 'string',
            description: 'F5: JSON array of {label, value} pairs given to every new item',
          },
          descriptions: {
            type: 'string',
            description:
              'F5: a CSV sheet, one row per file, matched by a file (or filename) column or a Dublin Core identifier column (the file name with or without its extension); title and language set the item, other Dublin Core names (creator, date, ...) and any other column become label/value metadata. A bad cell (a date that is not YYYY[-MM[-DD]]) is refused with 422 invalid_csv naming its row and column, storing nothing.',
          },
          transcribeTextLayer: {
            type: 'string',
            enum: ['true', 'false'],
            description:
              'I5: true starts engine jobs for PDF pages whose text layer was imported, too',
          },
          transcriptVerified: {
            type: 'string',
            enum: ['true', 'false'],
            description:
              'V10: true imports the transcripts (and PDF text layers) as ground truth: their lines are verified, not imported',
          },
          transcript: {
            type: 'array',
            items: { type: 'string', contentMediaType: 'application/xml' },
            description:
              "I3/I6: a PAGE XML, ALTO or hOCR file sent right after the image it describes (at most one per image); its lines become the page's revision 1 (source import) and no job is started for that page. Refused with transcript_malformed, transcript_unsupported, transcript_too_large, transcript_invalid, transcript_size_mismatch, transcript_without_image, duplicate_transcript, transcript_for_audio or transcript_for_document, storing nothing.",
          },
        },
        required: ['files[]'],
      },
    },
    responses: {
      '201': {
        description:
          '{batchId, pages:[{pageId,itemId,canvasUri,jobId}], files:[{index,filename,status:stored,pages} or {index,filename,status:refused,error:{code,message}}]}. I9: in a batch of several files a file refused for itself is refused alone and listed with its code; the others are stored. When every file is refused, so is the request, with the first refusal.',
      },
      ...errors([400, 401, 404, 413, 415, 422]),
    },
  },
  {
    method: 'post',
    path: `${ws}/batches/{batchId}/cancel`,
    summary: 'Cancel every active job of a batch (J5)',
    tag: 'batches',
    responses: { '200': { description: 'canceled' }, ...errors([401, 404]) },
  },
  {
    method: 'delete',
    path: `${ws}/items/{itemId}`,
    summary:
      'Delete an item: pages, revisions and checkpoints in one transaction, blobs to cleanup (U3)',
    tag: 'items',
    responses: {
      '200': { description: '{itemId, pages, blobsHandedToCleanup}' },
      ...errors([401, 404, 409]),
    },
  },
  {
    method: 'get',
    path: `${ws}/items/{itemId}/export`,
    summary:
      'Export an item: format=pdf, a searchable PDF of its image pages with their current lines as invisible text, streamed (I7)',
    tag: 'items',
    query: itemExportQuery,
    responses: {
      '200': { description: 'the searchable PDF', mediaType: 'application/pdf' },
      ...errors([400, 401, 404, 422]),
    },
  },
  {
    method: 'get',
    path: `${ws}/operations`,
    summary: 'Alert figures: queue age, failed deliveries and cleanups, bytes stored (O3, U2)',
    tag: 'operations',
    responses: { '200': { description: '{queue, storage}' }, ...errors([401, 404]) },
  },
  {
    method: 'post',
    path: `${ws}/transcription-jobs`,
    summary:
      'Start a transcription job (J4 supersede, J6 idempotency key); provider and options are checked against the providers this installation runs, 422 unknown_provider, provider_not_enabled, provider_kind_mismatch, simulated_not_enabled, invalid_simulated_options (M2)',
    tag: 'jobs',
    body: startJobBody,
    responses: {
      '202': { description: 'recorded and started', schema: startedJobResponse },
      ...errors([400, 401, 404, 413, 415, 422, 503]),
    },
  },
  {
    method: 'get',
    path: `${ws}/transcription-jobs`,
    summary: 'List job summaries, newest first, keyset-paged (L1)',
    tag: 'jobs',
    query: listJobsQuery,
    responses: {
      '200': { description: 'one page', schema: listJobsResponse },
      ...errors([400, 401, 404]),
    },
  },
  {
    method: 'get',
    path: `${ws}/transcription-jobs/{jobId}`,
    summary: 'A job with its progress and ordered attempt audit (L1)',
    tag: 'jobs',
    responses: { '200': { description: 'job' }, ...errors([401, 404]) },
  },
  {
    method: 'post',
    path: `${ws}/transcription-jobs/{jobId}/cancel`,
    summary: 'Cancel a job (J5)',
    tag: 'jobs',
    responses: { '200': { description: 'canceled' }, ...errors([401, 404, 409, 503]) },
  },
  {
    method: 'get',
    path: `${ws}/pages/{pageId}`,
    summary: 'The current revision of a page; ETag is the revision',
    tag: 'pages',
    responses: { '200': { description: 'page', schema: pageResponse }, ...errors([400, 401, 404]) },
  },
  {
    method: 'put',
    path: `${ws}/pages/{pageId}`,
    summary:
      'Human edit from the If-Match revision (V1: changed lines become `edited`; V4: merged line by line onto the current revision)',
    tag: 'pages',
    body: pageEditBody,
    headers: [{ name: 'If-Match', required: true, description: 'The revision edited, e.g. "3"' }],
    responses: {
      '200': { description: 'saved; ETag is the new revision', schema: pageResponse },
      '409': {
        description:
          '`line_conflict`: lines changed since the If-Match revision were changed by this save too; `conflicts` gives each line with the other text, its state and author (`by`, and `byName`: the name of the account or the label of the key, R7)',
        schema: errorBody,
      },
      ...errors([400, 401, 404, 412, 413, 415, 422, 428]),
    },
  },
  {
    method: 'post',
    path: `${ws}/pages/{pageId}/verify`,
    summary: 'V1: mark lines of the If-Match revision `verified` (merged as a save is, V4)',
    tag: 'review',
    body: pageVerifyBody,
    headers: [{ name: 'If-Match', required: true, description: 'The revision read, e.g. "3"' }],
    responses: {
      '200': { description: 'saved; ETag is the new revision', schema: pageResponse },
      '409': { description: '`line_conflict`: a line was changed since', schema: errorBody },
      ...errors([400, 401, 404, 412, 415, 422, 428]),
    },
  },
  {
    method: 'get',
    path: `${ws}/review`,
    summary: 'V2: lines not verified, lowest engine confidence first, keyset-paged',
    tag: 'review',
    query: reviewQuery,
    responses: { '200': { description: 'lines and nextPageToken' }, ...errors([400, 401]) },
  },
  {
    method: 'get',
    path: `${ws}/progress`,
    summary: 'V5: lines by state and fully verified pages, of the workspace or an item',
    tag: 'review',
    query: progressQuery,
    responses: { '200': { description: 'counts' }, ...errors([400, 401]) },
  },
  {
    method: 'get',
    path: `${ws}/pages/{pageId}/revisions`,
    summary: 'Revision history with provenance, newest first',
    tag: 'pages',
    query: revisionsQuery,
    responses: { '200': { description: 'revisions' }, ...errors([400, 401, 404]) },
  },
  {
    method: 'get',
    path: `${ws}/pages/{pageId}/revisions/{revision}`,
    summary: 'One kept revision',
    tag: 'pages',
    responses: { '200': { description: 'revision' }, ...errors([400, 401, 404]) },
  },
  {
    method: 'get',
    path: `${ws}/pages/{pageId}/export`,
    summary:
      'Export the current revision (iiif, text, vtt, srt, alto, page, hocr; pdf: searchable PDF, I7)',
    tag: 'pages',
    query: exportQuery,
    responses: {
      '200': { description: 'the export in its media type', mediaType: '*/*' },
      ...errors([400, 401, 404, 422]),
    },
  },
  {
    method: 'post',
    path: `${ws}/pages/{pageId}/publish`,
    summary: 'Publish a revision (E3)',
    tag: 'pages',
    body: publishBody,
    responses: {
      '200': { description: 'published (or already public)' },
      ...errors([400, 401, 404, 409, 415]),
    },
  },
  {
    method: 'get',
    path: `${ws}/search`,
    summary:
      'Full-text search of current revisions, best first, each hit with up to three line snippets (segmentIndex, text, highlight offsets); filters collectionId (with sub-collections) and kind; matched in the item language where PostgreSQL stems it. A query matching more than 5,000 pages is ranked among the first 5,000 found (F3)',
    tag: 'pages',
    query: searchQuery,
    responses: { '200': { description: 'hits' }, ...errors([400, 401, 404]) },
  },
  {
    method: 'post',
    path: `${ws}/webhooks`,
    summary: 'Create a webhook subscription (W1)',
    tag: 'webhooks',
    body: createWebhookBody,
    responses: {
      '201': { description: 'created; the secret is never returned', schema: webhookResponse },
      // 409 `webhook_url_exists`: the workspace already has a webhook for this URL.
      ...errors([400, 401, 404, 409, 413, 415, 422]),
    },
  },
  {
    method: 'get',
    path: `${ws}/webhooks`,
    summary: 'List webhook subscriptions',
    tag: 'webhooks',
    responses: { '200': { description: 'subscriptions' }, ...errors([401, 404]) },
  },
  {
    method: 'get',
    path: `${ws}/webhooks/{webhookId}`,
    summary: 'One webhook subscription',
    tag: 'webhooks',
    responses: {
      '200': { description: 'subscription', schema: webhookResponse },
      ...errors([401, 404]),
    },
  },
  {
    method: 'delete',
    path: `${ws}/webhooks/{webhookId}`,
    summary: 'Delete a subscription and its deliveries',
    tag: 'webhooks',
    responses: { '204': { description: 'deleted' }, ...errors([401, 404]) },
  },
  {
    method: 'get',
    path: `${ws}/webhooks/{webhookId}/deliveries`,
    summary: 'Delivery log with attempts (W2)',
    tag: 'webhooks',
    query: deliveriesQuery,
    responses: { '200': { description: 'deliveries' }, ...errors([400, 401, 404]) },
  },
  {
    method: 'post',
    path: `${ws}/webhooks/{webhookId}/deliveries/{deliveryId}/replay`,
    summary: 'Replay a failed or dead delivery (W2)',
    tag: 'webhooks',
    responses: { '202': { description: 'due again' }, ...errors([400, 401, 404, 409]) },
  },
  {
    method: 'get',
    path: `${ws}/events`,
    summary: 'Server-sent event stream of the workspace (S1)',
    tag: 'events',
    query: eventsQuery,
    auth: 'bearer-or-session',
    headers: [
      {
        name: 'Last-Event-ID',
        required: false,
        description: 'Resume strictly after this outbox id',
      },
    ],
    responses: {
      '200': {
        description: 'text/event-stream; ready, events, checkpoints, heartbeats',
        mediaType: 'text/event-stream',
      },
      ...errors([400, 401, 404, 429]),
    },
  },
  {
    method: 'get',
    path: `${ws}/providers`,
    summary:
      "Provider queue states as this workspace sees them (the installation's pauses and its own), and spend today (Q3, B1, M3)",
    tag: 'providers',
    responses: { '200': { description: 'providers' }, ...errors([401, 404]) },
  },
  {
    method: 'post',
    path: `${ws}/providers/{name}/resume`,
    summary:
      "Resume this workspace's own pause of a provider on workspace credentials; 404 for providers on the installation's shared credentials, which operators resume (Q3, M3)",
    tag: 'providers',
    responses: { '200': { description: 'resumed' }, ...errors([401, 404, 503]) },
  },
  {
    method: 'get',
    path: '/openapi.json',
    summary: 'This document',
    tag: 'meta',
    auth: 'none',
    responses: { '200': { description: 'OpenAPI 3.1' } },
  },
  ...ARCHIVE_OPERATIONS,
  ...OPERATOR_OPERATIONS,
];

/** JSON Schema of the request side (inputs, defaults applied by the server). */
export function inputSchema(schema: z.ZodType): JsonSchema {
  const { $schema: _drop, ...rest } = z.toJSONSchema(schema, {
    io: 'input',
    unrepresentable: 'any',
  }) as JsonSchema;
  return rest;
}

function outputSchema(schema: z.ZodType): JsonSchema {
  const { $schema: _drop, ...rest } = z.toJSONSchema(schema, {
    io: 'output',
    unrepresentable: 'any',
  }) as JsonSchema;
  return rest;
}

function parameters(operation: Operation) {
  const out: Array<Record<string, unknown>> = [];
  for (const name of operation.path.match(/\{([^}]+)\}/g) ?? []) {
    const key = name.slice(1, -1);
    out.push({ name: key, in: 'path', required: true, schema: { type: 'string' } });
  }
  if (operation.query) {
    for (const [name, field] of Object.entries(operation.query.shape)) {
      const schema = field as z.ZodType;
      out.push({
        name,
        in: 'query',
        required: !schema.safeParse(undefined).success,
        schema: inputSchema(schema),
      });
    }
  }
  for (const header of operation.headers ?? []) {
    out.push({
      name: header.name,
      in: 'header',
      required: header.required,
      description: header.description,
      schema: { type: 'string' },
    });
  }
  return out;
}

let cached: Record<string, unknown> | undefined;

export function openApiDocument(): Record<string, unknown> {
  if (cached) return cached;
  const paths: Record<string, Record<string, unknown>> = {};
  for (const op of OPERATIONS) {
    const entry: Record<string, unknown> = {
      operationId: `${op.method}${op.path.replace(/\{([^}]+)\}/g, 'By_$1').replace(/[^A-Za-z0-9]+(.)?/g, (_m, c: string | undefined) => (c ? c.toUpperCase() : ''))}`,
      summary: op.summary,
      tags: [op.tag],
      parameters: parameters(op),
      responses: Object.fromEntries(
        Object.entries(withPathRefusal(op)).map(([status, r]) => [
          status,
          {
            description: r.description,
            ...(r.schema || r.mediaType
              ? {
                  content: {
                    [r.mediaType ?? 'application/json']: r.schema
                      ? { schema: outputSchema(r.schema) }
                      : {},
                  },
                }
              : {}),
          },
        ]),
      ),
    };
    if (op.body) {
      entry.requestBody = {
        required: true,
        content: { 'application/json': { schema: inputSchema(op.body) } },
      };
    } else if (op.rawBody) {
      entry.requestBody = {
        required: true,
        content: { [op.rawBody.mediaType]: { schema: op.rawBody.schema } },
      };
    }
    if (op.auth === 'none') entry.security = [];
    else if (op.auth === 'bearer-or-session') entry.security = [{ bearer: [] }, { session: [] }];
    else if (op.auth === 'operator') entry.security = [{ operator: [] }];
    paths[op.path] ??= {};
    paths[op.path]![op.method] = entry;
  }
  cached = {
    openapi: '3.1.0',
    info: {
      title: 'Quire API',
      version: '1',
      description:
        "Transcription jobs, pages, publication, search, webhooks and the event stream. Errors are `{error:{code,message}}` with a stable code; another workspace's ids are 404. Text holding NUL or a lone UTF-16 surrogate is refused wherever it comes in (400 `invalid_text` in bodies and upload fields, `invalid_path` in path ids, `invalid_query` in queries); a page's lines hold at most 20,000 characters each and 150,000 bytes in all (413 `page_text_too_large`), so every accepted text fits the search index. An uploaded PAGE or ALTO transcript is held to the same limits: 422 `transcript_line_too_long`, `transcript_invalid_language`, `transcript_invalid_namespace`, `transcript_invalid_text`, `transcript_too_deep` (more than 100 nested elements), `transcript_reserved_name` (`__proto__` and the like), 413 `transcript_too_large` (also for an outline of more than 10,000 points); an `itemId` of `.` or `..` is 422 `invalid_field`. IIIF Presentation 3 manifests live outside this API, at `/iiif/{ws}/{item}/manifest` beside the canvas URIs, collections at `/iiif/{ws}/collection/{id}`, and each image page's IIIF Image API 3 service at `/iiif/{ws}/image/{pageId}` (public for published pages, drafts with the workspace's key).",
    },
    servers: [{ url: '/api/v1' }],
    security: [{ bearer: [] }],
    components: {
      securitySchemes: {
        bearer: { type: 'http', scheme: 'bearer', description: 'A workspace API key (qk_...)' },
        operator: {
          type: 'http',
          scheme: 'bearer',
          description: 'An operator key (qo_...), from `quire admin create-operator-key` (M1)',
        },
        session: {
          type: 'apiKey',
          in: 'cookie',
          name: 'quire_session',
          description: 'Console session (events only)',
        },
      },
    },
    paths,
  };
  return cached;
}
