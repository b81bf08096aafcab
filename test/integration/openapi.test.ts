import { readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import Ajv2020 from 'ajv/dist/2020';
import { describe, expect, it } from 'vitest';
import { inputSchema, OPERATIONS, openApiDocument } from '../../web/lib/openapi';
import * as schemas from '../../web/lib/schemas';

/** The OpenAPI document matches the route files and what the handlers accept (SPEC §7). */
const API_DIR = join(__dirname, '../../web/app/api/v1');
const METHODS = ['GET', 'POST', 'PUT', 'DELETE', 'PATCH'] as const;

function routeFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = join(dir, entry.name);
    if (entry.isDirectory()) return routeFiles(full);
    return entry.name === 'route.ts' ? [full] : [];
  });
}

function documentedPath(file: string): string {
  const rel = relative(API_DIR, file).replace(/\/?route\.ts$/, '');
  return `/${rel.replace(/\[([^\]]+)\]/g, '{$1}')}`;
}

// biome-ignore lint/suspicious/noExplicitAny: the document is plain JSON
const doc = openApiDocument() as any;

describe('OpenAPI document (SPEC §7)', () => {
  it('every route file under web/app/api/v1 is documented with each method it exports, and nothing else is', async () => {
    const files = routeFiles(API_DIR);
    expect(files.length).toBeGreaterThanOrEqual(18);
    const fromFiles = new Set<string>();
    for (const file of files) {
      const module = (await import(file)) as Record<string, unknown>;
      const methods = METHODS.filter((m) => typeof module[m] === 'function');
      expect(methods.length, file).toBeGreaterThan(0);
      for (const method of methods) {
        const path = documentedPath(file);
        fromFiles.add(`${method.toLowerCase()} ${path}`);
        expect(doc.paths[path]?.[method.toLowerCase()], `${method} ${path}`).toBeDefined();
      }
    }
    const documented = new Set(
      Object.entries(doc.paths).flatMap(([path, ops]) =>
        Object.keys(ops as object).map((m) => `${m} ${path}`),
      ),
    );
    expect([...documented].sort()).toEqual([...fromFiles].sort());
    expect(doc.openapi).toBe('3.1.0');
    const ids = OPERATIONS.map((o) => doc.paths[o.path][o.method].operationId);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('documented request bodies accept the requests the handlers accept, and reject what they reject', () => {
    const ajv = new Ajv2020({ strict: false, allErrors: true });
    const body = (method: string, path: string) =>
      doc.paths[path][method].requestBody.content['application/json'].schema;
    const samples: Array<{
      method: string;
      path: string;
      schema: import('zod').ZodType;
      ok: unknown[];
      bad: unknown[];
    }> = [
      {
        method: 'post',
        path: '/workspaces/{ws}/transcription-jobs',
        schema: schemas.startJobBody,
        ok: [
          { pageId: 1 },
          {
            pageId: 7,
            provider: 'simulated',
            options: { simulated: { lines: 3 } },
            idempotencyKey: 'scan-1',
            externalReferenceId: 'ext',
            metadata: { shelf: 'B7' },
            language: 'de-DE',
          },
        ],
        bad: [
          {},
          { pageId: 'one' },
          { pageId: 0 },
          { pageId: 1, surprise: true },
          { pageId: 1, language: 'German' },
        ],
      },
      {
        method: 'put',
        path: '/workspaces/{ws}/pages/{pageId}',
        schema: schemas.pageEditBody,
        ok: [
          { segments: [] },
          {
            segments: [
              { index: 0, target: { kind: 'xywh', box: { x: 0, y: 0, w: 10, h: 5 } }, text: 'a' },
            ],
          },
          {
            segments: [
              {
                index: 0,
                target: { kind: 't', start: 0, end: 1.5 },
                text: 'b',
                speaker: 'S1',
                confidence: 0.9,
              },
            ],
            language: 'en',
          },
        ],
        bad: [
          {},
          { segments: [{ index: 0, target: { kind: 'q' }, text: 'x' }] },
          { segments: [{ index: -1, target: { kind: 't', start: 0, end: 1 }, text: '' }] },
        ],
      },
      {
        method: 'post',
        path: '/workspaces/{ws}/pages/{pageId}/publish',
        schema: schemas.publishBody,
        ok: [{ expectedRevision: 0 }, { expectedRevision: 12 }],
        bad: [
          {},
          { expectedRevision: -1 },
          { expectedRevision: '1' },
          { expectedRevision: 1, extra: 1 },
        ],
      },
      {
        method: 'patch',
        path: '/workspaces/{ws}',
        schema: schemas.workspaceSettingsBody,
        ok: [{ recordingRetention: 'keep' }, { recordingRetention: 'delete-after-recognition' }],
        bad: [{}, { recordingRetention: 'forever' }, { recordingRetention: 'keep', name: 'x' }],
      },
      {
        method: 'post',
        path: '/workspaces/{ws}/pages/{pageId}/verify',
        schema: schemas.pageVerifyBody,
        ok: [{ lines: [0] }, { lines: [0, 3, 7] }],
        bad: [{}, { lines: [] }, { lines: [-1] }, { lines: ['1'] }, { lines: [0], extra: 1 }],
      },
      {
        method: 'post',
        path: '/workspaces/{ws}/webhooks',
        schema: schemas.createWebhookBody,
        ok: [
          { url: 'https://example.com/hook', secret: 'x'.repeat(40) },
          {
            url: 'https://example.com/hook',
            secret: 'x'.repeat(40),
            eventTypes: ['dev.quire.annotations.published'],
          },
        ],
        bad: [
          { url: 'https://example.com/hook' },
          { url: 'https://e.com', secret: 'x'.repeat(40), eventTypes: ['nope'] },
        ],
      },
    ];
    for (const sample of samples) {
      const documented = body(sample.method, sample.path);
      expect(documented).toEqual(inputSchema(sample.schema));
      const validate = ajv.compile(documented);
      for (const ok of sample.ok) {
        expect(sample.schema.safeParse(ok).success, JSON.stringify(ok)).toBe(true);
        expect(
          validate(ok),
          `${sample.path} ${JSON.stringify(ok)} ${JSON.stringify(validate.errors)}`,
        ).toBe(true);
      }
      for (const bad of sample.bad) {
        expect(sample.schema.safeParse(bad).success, JSON.stringify(bad)).toBe(false);
        expect(validate(bad), `${sample.path} ${JSON.stringify(bad)}`).toBe(false);
      }
    }
  });

  it('documented query parameters match the handlers: pageSize at most 100, status an enum, format an enum', async () => {
    const list = doc.paths['/workspaces/{ws}/transcription-jobs'].get.parameters;
    const pageSize = list.find((p: { name: string }) => p.name === 'pageSize');
    expect(pageSize).toMatchObject({
      in: 'query',
      required: false,
      schema: { maximum: 100, minimum: 1, default: 50 },
    });
    expect(list.find((p: { name: string }) => p.name === 'status').schema.enum).toContain(
      'superseded',
    );
    const format = doc.paths['/workspaces/{ws}/pages/{pageId}/export'].get.parameters.find(
      (p: { name: string }) => p.name === 'format',
    );
    expect(format).toMatchObject({
      required: true,
      schema: { enum: ['iiif', 'text', 'vtt', 'srt', 'alto', 'page', 'hocr', 'pdf'] },
    });
    const { GET } = await import('../../web/app/api/v1/openapi.json/route');
    const served = await (await GET()).json();
    expect(served).toEqual(doc);
  });
});
