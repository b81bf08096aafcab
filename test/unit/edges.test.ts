import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { DomainError } from '../../core/errors';
import { parseTranscript, TranscriptRejection } from '../../core/interchange/transcriptImport';
import {
  findTextFault,
  MAX_PAGE_TEXT_BYTES,
  pageTextBytes,
  searchTextOf,
  textFault,
} from '../../core/text';
import { applyField, DEFAULT_INGEST_LIMITS, emptyFields, IngestError } from '../../ingest/request';
import { STATUS_OF_KIND } from '../../web/lib/errors';
import { KANT } from '../support/interchange';

/**
 * R6 in the pure parts: the text Quire refuses, and the transcript import held to the API's
 * own limits. Each refusal is a DomainError with a stable code whose kind maps to 400, 413 or
 * 422 (never an Error that the web answers with 500).
 */

const enc = (text: string) => new TextEncoder().encode(text);

function alto(inner: string, lang = ''): string {
  return `<?xml version="1.0" encoding="UTF-8"?>
<alto xmlns="http://www.loc.gov/standards/alto/ns-v4#"><Layout><Page WIDTH="100" HEIGHT="100"><PrintSpace><TextBlock ID="b"${lang}>${inner}</TextBlock></PrintSpace></Page></Layout></alto>`;
}

function altoLine(content: string): string {
  return `<TextLine HPOS="1" VPOS="1" WIDTH="10" HEIGHT="10"><String CONTENT="${content}"/></TextLine>`;
}

function pageXml(points: string, namespace = '2019-07-15'): string {
  return `<?xml version="1.0" encoding="UTF-8"?>
<PcGts xmlns="http://schema.primaresearch.org/PAGE/gts/pagecontent/${namespace}"><Page imageWidth="100" imageHeight="100"><TextRegion id="r"><TextLine id="l"><Coords points="${points}"/><TextEquiv><Unicode>x</Unicode></TextEquiv></TextLine></TextRegion></Page></PcGts>`;
}

function refusalOf(run: () => unknown): { code: string; status: number } {
  try {
    run();
  } catch (error) {
    if (error instanceof DomainError)
      return { code: error.code, status: STATUS_OF_KIND[error.kind] };
    return {
      code: `not a DomainError: ${(error as Error).name}: ${(error as Error).message}`,
      status: 500,
    };
  }
  return { code: 'accepted', status: 200 };
}

const longPolygon = Array.from({ length: 150_000 }, (_, i) => `${i % 90},${(i * 7) % 90}`).join(
  ' ',
);

const imports: Array<{ name: string; file: string; code: string; status: number }> = [
  {
    name: 'a 150,000-point polygon',
    file: pageXml(longPolygon),
    code: 'transcript_too_large',
    status: 413,
  },
  {
    name: '101 nested elements',
    file: alto(`${'<x>'.repeat(101)}${'</x>'.repeat(101)}`),
    code: 'transcript_too_deep',
    status: 422,
  },
  {
    name: 'an element named __proto__',
    file: alto(`<__proto__>${altoLine('a')}</__proto__>`),
    code: 'transcript_reserved_name',
    status: 422,
  },
  {
    name: 'a 200,000-character language',
    file: alto(altoLine('Wort'), ` LANG="de-${'abcdefgh-'.repeat(22_222)}x1"`),
    code: 'transcript_invalid_language',
    status: 422,
  },
  {
    name: 'a language that is not BCP 47',
    file: alto(altoLine('Wort'), ' LANG="German language"'),
    code: 'transcript_invalid_language',
    status: 422,
  },
  {
    name: 'a line beyond the API cap of 20,000 characters',
    file: alto(altoLine('w'.repeat(20_001))),
    code: 'transcript_line_too_long',
    status: 422,
  },
  {
    name: 'a 7 MB line',
    file: alto(altoLine('w'.repeat(7 * 1024 * 1024))),
    code: 'transcript_line_too_long',
    status: 422,
  },
  {
    name: 'a namespace of 1 MB',
    file: pageXml('1,1 9,1 9,9 1,9', `2019-07-15${'x'.repeat(1024 * 1024)}`),
    code: 'transcript_invalid_namespace',
    status: 422,
  },
  {
    // A raw NUL passes fast-xml-parser's validator (its `&#0;` and `&#xD800;` are dropped).
    name: 'a NUL character in a line',
    file: alto(altoLine('a\u0000b')),
    code: 'transcript_invalid_text',
    status: 422,
  },
  {
    name: 'more text than the search index takes',
    file: alto(Array.from({ length: 10 }, () => altoLine('w '.repeat(9_000))).join('')),
    code: 'transcript_too_large',
    status: 413,
  },
];

describe('R6 the transcript import applies the API limits', () => {
  for (const c of imports) {
    it(`R6 an import with ${c.name} is ${c.status} ${c.code}`, () => {
      expect(refusalOf(() => parseTranscript(enc(c.file)))).toEqual({
        code: c.code,
        status: c.status,
      });
    });
  }

  it('R6 the limits leave real files alone: the Kant PAGE and ALTO files and a 2,000-point outline import', () => {
    expect(parseTranscript(readFileSync(KANT.page)).segments.length).toBeGreaterThan(10);
    expect(parseTranscript(readFileSync(KANT.alto)).segments.length).toBeGreaterThan(10);
    const outline = Array.from({ length: 2_000 }, (_, i) => `${i % 90},${(i * 7) % 90}`).join(' ');
    const segment = parseTranscript(enc(pageXml(outline))).segments[0]!;
    expect(segment.target).toEqual({ kind: 'xywh', box: { x: 0, y: 0, w: 89, h: 89 } });
    const tagged = parseTranscript(enc(alto(altoLine('Wort'), ' LANG="de-DE"')));
    expect(tagged.language).toBe('de-DE');
  });

  it('R6 a refusal never quotes the file', () => {
    try {
      parseTranscript(enc(alto(altoLine(`secret-${'w'.repeat(20_001)}`))));
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(TranscriptRejection);
      expect((error as Error).message).not.toContain('secret');
    }
  });
});

describe('R6 text the database cannot hold', () => {
  it('R6 NUL and lone surrogates are found; paired surrogates, emoji and other controls pass', () => {
    expect(textFault('a\u0000b')).toBe('nul');
    expect(textFault('a\uD800b')).toBe('lone_surrogate');
    expect(textFault('a\uDC00')).toBe('lone_surrogate');
    expect(textFault('\uDC00\uD800')).toBe('lone_surrogate');
    expect(textFault('a😀b \uD83D\uDE00 \u0001 ſ')).toBeUndefined();
    expect(findTextFault({ segments: [{ text: 'ok' }, { text: 'x\u0000' }] })).toEqual({
      path: 'segments.1.text',
      fault: 'nul',
    });
    expect(findTextFault({ metadata: { 'k\uD800': 1 } })?.fault).toBe('lone_surrogate');
    // Deep nesting does not exhaust the stack.
    let deep: unknown = 'x\u0000';
    for (let i = 0; i < 100_000; i++) deep = [deep];
    expect(findTextFault(deep)?.fault).toBe('nul');
  });

  it('R6 upload fields with NUL or a lone surrogate are 400 invalid_text; itemId . and .. are 422', () => {
    const request = new Request('http://quire.test/x', { method: 'POST' });
    const field = (name: string, value: string) =>
      refusalOf(() => applyField(emptyFields(request), name, value, DEFAULT_INGEST_LIMITS));
    expect(field('metadata', '{"a":"x\\u0000y"}')).toEqual({ code: 'invalid_text', status: 400 });
    expect(field('metadata', '{"a":"\\ud800"}')).toEqual({ code: 'invalid_text', status: 400 });
    expect(field('metadata', '{"\\u0000":1}')).toEqual({ code: 'invalid_text', status: 400 });
    expect(field('externalReferenceId', 'ref\u0000')).toEqual({
      code: 'invalid_text',
      status: 400,
    });
    expect(field('externalReferenceId', 'ref\uDFFF')).toEqual({
      code: 'invalid_text',
      status: 400,
    });
    expect(field('itemId', '.')).toEqual({ code: 'invalid_field', status: 422 });
    expect(field('itemId', '..')).toEqual({ code: 'invalid_field', status: 422 });
    expect(field('itemId', '...register.1')).toEqual({ code: 'accepted', status: 200 });
    expect(field('metadata', '{"a":"ſ 😀"}')).toEqual({ code: 'accepted', status: 200 });
    expect(() => applyField(emptyFields(request), 'itemId', '..', DEFAULT_INGEST_LIMITS)).toThrow(
      IngestError,
    );
  });

  it('R6 the search text of an engine page is bounded on a word and character boundary', () => {
    const words = Array.from({ length: 60_000 }, (_, i) => `wörd${i}`);
    const segments = [{ text: words.join(' ') }];
    expect(pageTextBytes(segments)).toBeGreaterThan(MAX_PAGE_TEXT_BYTES);
    const search = searchTextOf(segments);
    expect(Buffer.byteLength(search)).toBeLessThanOrEqual(MAX_PAGE_TEXT_BYTES);
    expect(search.startsWith('wörd0 wörd1 ')).toBe(true);
    const last = search.split(' ').at(-1)!;
    expect(words).toContain(last);
    expect(search).not.toContain('\uFFFD');
    expect(searchTextOf([{ text: 'a' }, { text: 'b' }])).toBe('a\nb');
  });
});

describe('R6 security headers', () => {
  it('R6 next.config.ts gives every route-handler path the data policy of web/lib/securityHeaders.ts, and nosniff everywhere', async () => {
    const { DATA_POLICY } = await import('../../web/lib/securityHeaders');
    const nextConfig = (await import('../../web/next.config')).default;
    const rules = await nextConfig.headers!();
    const policyOf = (source: string) =>
      rules
        .find((r) => r.source === source)
        ?.headers.find((h) => h.key === 'Content-Security-Policy')?.value;
    for (const source of ['/api/:path*', '/console-api/:path*', '/iiif/:path*', '/healthz']) {
      expect(policyOf(source), source).toBe(DATA_POLICY);
    }
    const all = rules.find((r) => r.source === '/:path*')!.headers;
    expect(all).toContainEqual({ key: 'X-Content-Type-Options', value: 'nosniff' });
    expect(policyOf('/:path*')).toBeUndefined();
  });
});

describe('R6 the Origin rule', () => {
  it('R6 a state-changing request passes only from the public origin, or without Origin when the browser says same-origin', async () => {
    const { originRefusal } = await import('../../web/lib/origin');
    const verdict = (
      method: string,
      headers: Record<string, string>,
      publicUrl = 'https://quire.example/',
    ) => originRefusal(method, new Headers(headers), publicUrl)?.code ?? 'allowed';
    expect(verdict('POST', { origin: 'https://quire.example' })).toBe('allowed');
    expect(verdict('DELETE', { origin: 'https://quire.example' })).toBe('allowed');
    // The default port is no part of an origin; a path in the public URL is no part of it either.
    expect(
      verdict('POST', { origin: 'https://quire.example' }, 'https://quire.example:443/q'),
    ).toBe('allowed');
    expect(verdict('POST', { 'sec-fetch-site': 'same-origin' })).toBe('allowed');
    const refused: Array<Record<string, string>> = [
      { origin: 'http://quire.example' },
      { origin: 'https://quire.example:8233' },
      { origin: 'https://evil.example' },
      { origin: 'https://quire.example.evil.example' },
      { origin: 'null' },
      {},
      { 'sec-fetch-site': 'same-site' },
      { 'sec-fetch-site': 'none' },
      { origin: 'https://evil.example', 'sec-fetch-site': 'same-origin' },
    ];
    for (const headers of refused) {
      expect(verdict('POST', headers), JSON.stringify(headers)).toBe('origin_mismatch');
      expect(verdict('PUT', headers), JSON.stringify(headers)).toBe('origin_mismatch');
    }
    // Reading is never refused: links from other sites still open the console.
    expect(verdict('GET', { origin: 'https://evil.example' })).toBe('allowed');
    expect(verdict('HEAD', {})).toBe('allowed');
    expect(verdict('OPTIONS', { origin: 'https://viewer.example' })).toBe('allowed');
  });
});
