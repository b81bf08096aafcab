import { copyFile, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import { REAL_FIXTURES } from './fixtures';
import { KANT, MANIFESTO } from './interchange';

/**
 * F8: an institution-style IIIF server on loopback, serving files from a folder as a static
 * web server does: a Presentation 3 manifest with a level-0 Image API 3 service in the static
 * layout (info.json with `sizes`, and `full/max` and `full/w,h` images made once with sharp),
 * painted TIFFs without a service, an external W3C annotation page and `seeAlso` hOCR and ALTO
 * files; a Presentation 2 manifest with a level-0 and a level-1 Image API 2 service and an
 * `otherContent` annotation list. The images are the real scans of test/fixtures (the manifesto
 * page, Kant's page, two Fraktur lines) and the transcriptions their real hOCR, ALTO and
 * ground-truth text. Besides the folder: `/huge.json` streams more bytes than any limit with
 * no Content-Length, `/slow.json` never ends, `/moved.json` redirects to `localhost` (a name
 * off an allowlist naming 127.0.0.1), `/broken/manifest.json`'s second image is missing, and
 * `/many/manifest.json` has `manyCanvases` canvases.
 */

export const FRAKTUR_LINES = {
  bismarck: 'bismarck_erinnerungen02_1898_0131_019',
  eichendorff: 'eichendorff_taugenichts_1826_0029_017',
};

export interface IiifServer {
  origin: string;
  /** `127.0.0.1:<port>`, for QUIRE_IIIF_ALLOW_HOSTS. */
  host: string;
  port: number;
  /** Requests answered, by path. */
  served: string[];
  /** Sizes of the files behind the manifests: manifesto 2745x4445, Kant 1457x2083, lines. */
  sizes: Record<
    'manifesto' | 'kant' | 'bismarck' | 'eichendorff',
    { width: number; height: number }
  >;
  close(): Promise<void>;
}

const TYPES: Record<string, string> = {
  '.json': 'application/ld+json',
  '.jpg': 'image/jpeg',
  '.tif': 'image/tiff',
  '.xml': 'application/xml',
  '.hocr': 'text/html',
  '.html': 'text/html',
};

/** Level-0 sizes of the manifesto page (2745x4445): the largest fits 2000 per side. */
const MANIFESTO_SIZES = [
  { width: 686, height: 1111 },
  { width: 1235, height: 2000 },
];

export async function startIiifServer(
  options: { manyCanvases?: number } = {},
): Promise<IiifServer> {
  const dir = await mkdtemp(path.join(tmpdir(), 'quire-iiif-server-'));
  const served: string[] = [];
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    served.push(url.pathname);
    if (url.pathname === '/huge.json') {
      res.writeHead(200, { 'content-type': 'application/json' });
      const chunk = Buffer.alloc(64 * 1024, 0x20);
      let sent = 0;
      const more = () => {
        while (sent < 64 * 1024 * 1024) {
          sent += chunk.length;
          if (!res.write(chunk)) return void res.once('drain', more);
        }
        res.end();
      };
      res.on('close', () => {
        sent = Number.POSITIVE_INFINITY;
      });
      more();
      return;
    }
    if (url.pathname === '/moved.json') {
      // A redirect to the same server by a name off the allowlist.
      res.writeHead(302, { location: `http://localhost:${port}/p3/manifest.json` }).end();
      return;
    }
    if (url.pathname === '/slow.json') {
      // Headers, then nothing: only the import's time limit ends this.
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{');
      return;
    }
    const file = path.join(dir, decodeURIComponent(url.pathname));
    if (!file.startsWith(dir)) {
      res.writeHead(404).end();
      return;
    }
    readFile(file).then(
      (bytes) => {
        res.writeHead(200, {
          'content-type': TYPES[path.extname(file)] ?? 'application/octet-stream',
          'content-length': bytes.length,
        });
        res.end(bytes);
      },
      () => res.writeHead(404).end(),
    );
  });
  let port = 0;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
  const origin = `http://127.0.0.1:${port}`;
  const sizes = {
    manifesto: { width: 2745, height: 4445 },
    kant: { width: KANT.width, height: KANT.height },
    bismarck: await sizeOf(
      path.join(REAL_FIXTURES, 'fraktur-lines', `${FRAKTUR_LINES.bismarck}.tif`),
    ),
    eichendorff: await sizeOf(
      path.join(REAL_FIXTURES, 'fraktur-lines', `${FRAKTUR_LINES.eichendorff}.tif`),
    ),
  };
  await writeFolder(dir, origin, sizes, options.manyCanvases ?? 0);
  return {
    origin,
    host: `127.0.0.1:${port}`,
    port,
    served,
    sizes,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await rm(dir, { recursive: true, force: true });
    },
  };
}

async function sizeOf(file: string): Promise<{ width: number; height: number }> {
  const meta = await sharp(file).metadata();
  return { width: meta.width!, height: meta.height! };
}

async function put(dir: string, relative: string, content: string | Buffer | object) {
  const file = path.join(dir, relative);
  await mkdir(path.dirname(file), { recursive: true });
  await writeFile(
    file,
    typeof content === 'string' || Buffer.isBuffer(content)
      ? content
      : JSON.stringify(content, null, 1),
  );
}

async function jpeg(source: string, size?: { width: number; height: number }, inside = false) {
  let image = sharp(source);
  if (size) image = image.resize(size.width, size.height, { fit: inside ? 'inside' : 'fill' });
  return image.jpeg({ quality: 85 }).toBuffer();
}

const en = (text: string) => ({ en: [text] });

async function writeFolder(
  dir: string,
  origin: string,
  sizes: IiifServer['sizes'],
  manyCanvases: number,
) {
  const line = (name: string) => path.join(REAL_FIXTURES, 'fraktur-lines', `${name}.tif`);
  const groundTruth = (name: string) =>
    readFile(path.join(REAL_FIXTURES, 'fraktur-lines', `${name}.gt.txt`), 'utf8').then((t) =>
      t.trim(),
    );

  // The manifesto page behind a level-0 Image API 3 service and a level-0 Image API 2 service.
  const full = await jpeg(MANIFESTO.image);
  for (const [version, base] of [
    [3, 'iiif3/manifesto'],
    [2, 'iiif2/manifesto'],
  ] as const) {
    await put(dir, `${base}/info.json`, {
      '@context': `http://iiif.io/api/image/${version}/context.json`,
      ...(version === 3
        ? { id: `${origin}/${base}`, type: 'ImageService3', profile: 'level0' }
        : { '@id': `${origin}/${base}`, profile: ['http://iiif.io/api/image/2/level0.json'] }),
      protocol: 'http://iiif.io/api/image',
      ...sizes.manifesto,
      sizes: MANIFESTO_SIZES,
    });
    await put(dir, `${base}/full/${version === 3 ? 'max' : 'full'}/0/default.jpg`, full);
    for (const size of MANIFESTO_SIZES) {
      const name = version === 3 ? `${size.width},${size.height}` : `${size.width},`;
      await put(dir, `${base}/full/${name}/0/default.jpg`, await jpeg(MANIFESTO.image, size));
    }
  }
  // Kant's page behind a level-1 Image API 2 service: it scales to any `!w,h`.
  await put(
    dir,
    'iiif2/kant/full/!2000,2000/0/default.jpg',
    await jpeg(KANT.image, { width: 2000, height: 2000 }, true),
  );
  await put(dir, 'iiif2/kant/full/full/0/default.jpg', await jpeg(KANT.image));
  await copyFile(KANT.image, await target(dir, 'images/kant.tif'));
  await copyFile(line(FRAKTUR_LINES.bismarck), await target(dir, 'images/bismarck.tif'));
  await copyFile(line(FRAKTUR_LINES.eichendorff), await target(dir, 'images/eichendorff.tif'));
  await copyFile(MANIFESTO.hocr, await target(dir, 'text/manifesto.hocr'));
  await copyFile(KANT.alto, await target(dir, 'text/kant.alto.xml'));
  await put(dir, 'text/kant.marc.json', { leader: '00000nam a2200000 i 4500' });
  await put(dir, 'index.html', '<!doctype html><title>Digital collections</title><p>Welcome</p>');

  const p3 = `${origin}/p3`;
  const bismarck = sizes.bismarck;
  await put(dir, 'p3/annotations/bismarck.json', {
    '@context': 'http://iiif.io/api/presentation/3/context.json',
    id: `${p3}/annotations/bismarck.json`,
    type: 'AnnotationPage',
    items: [
      {
        id: `${p3}/annotations/bismarck/1`,
        type: 'Annotation',
        motivation: 'supplementing',
        body: {
          type: 'TextualBody',
          value: await groundTruth(FRAKTUR_LINES.bismarck),
          format: 'text/plain',
          language: 'de',
        },
        target: `${p3}/canvas/3#xywh=0,0,${bismarck.width},${bismarck.height}`,
      },
      {
        id: `${p3}/annotations/bismarck/2`,
        type: 'Annotation',
        motivation: 'commenting',
        body: { type: 'TextualBody', value: 'Long s kept.', format: 'text/plain' },
        target: `${p3}/canvas/3#xywh=0,0,100,20`,
      },
    ],
  });
  const painted = (
    n: number,
    url: string,
    size: { width: number; height: number },
    format: string,
    service?: object,
  ) => ({
    id: `${p3}/canvas/${n}/page`,
    type: 'AnnotationPage',
    items: [
      {
        id: `${p3}/canvas/${n}/page/image`,
        type: 'Annotation',
        motivation: 'painting',
        body: {
          id: url,
          type: 'Image',
          format,
          ...size,
          ...(service ? { service: [service] } : {}),
        },
        target: `${p3}/canvas/${n}`,
      },
    ],
  });
  await put(dir, 'p3/manifest.json', {
    '@context': 'http://iiif.io/api/presentation/3/context.json',
    id: `${p3}/manifest.json`,
    type: 'Manifest',
    label: { en: ['Printed pages, 1784-1898: a miscellany'], de: ['Drucke, 1784-1898'] },
    metadata: [
      { label: en('Contents'), value: en('Communist Manifesto; Kant, Aufklärung; Fraktur lines') },
      { label: en('Date'), value: { none: ['1784-1898'] } },
      { label: en('Rights'), value: en('<span>Public domain</span>') },
    ],
    items: [
      {
        id: `${p3}/canvas/1`,
        type: 'Canvas',
        label: en('Manifesto, p. 15'),
        ...sizes.manifesto,
        seeAlso: [
          {
            id: `${origin}/text/manifesto.hocr`,
            type: 'Text',
            format: 'text/html',
            profile: 'http://kba.github.io/hocr-spec/1.2/',
          },
        ],
        items: [
          painted(
            1,
            `${origin}/iiif3/manifesto/full/max/0/default.jpg`,
            sizes.manifesto,
            'image/jpeg',
            {
              id: `${origin}/iiif3/manifesto`,
              type: 'ImageService3',
              profile: 'level0',
            },
          ),
        ],
      },
      {
        id: `${p3}/canvas/2`,
        type: 'Canvas',
        label: en('Kant, p. 17'),
        ...sizes.kant,
        seeAlso: [
          { id: `${origin}/text/kant.marc.json`, type: 'Dataset', format: 'application/json' },
          {
            id: `${origin}/text/kant.alto.xml`,
            type: 'Text',
            format: 'application/xml',
            profile: 'http://www.loc.gov/standards/alto/v4/alto.xsd',
          },
        ],
        items: [painted(2, `${origin}/images/kant.tif`, sizes.kant, 'image/tiff')],
      },
      {
        id: `${p3}/canvas/3`,
        type: 'Canvas',
        ...bismarck,
        items: [painted(3, `${origin}/images/bismarck.tif`, bismarck, 'image/tiff')],
        annotations: [{ id: `${p3}/annotations/bismarck.json`, type: 'AnnotationPage' }],
      },
      {
        id: `${p3}/canvas/4`,
        type: 'Canvas',
        ...sizes.eichendorff,
        items: [painted(4, `${origin}/images/eichendorff.tif`, sizes.eichendorff, 'image/tiff')],
      },
    ],
  });

  const p2 = `${origin}/p2`;
  await put(dir, 'p2/list/manifesto.json', {
    '@context': 'http://iiif.io/api/presentation/2/context.json',
    '@id': `${p2}/list/manifesto.json`,
    '@type': 'sc:AnnotationList',
    resources: [
      // The first two lines of the page, where tesseract's hOCR puts them.
      { box: '529,597,1231,136', chars: 'MANIFESTO' },
      { box: '981,787,295,53', chars: 'OF THE' },
    ].map((l, i) => ({
      '@id': `${p2}/annotation/${i + 1}`,
      '@type': 'oa:Annotation',
      motivation: 'sc:painting',
      resource: { '@type': 'cnt:ContentAsText', format: 'text/plain', chars: l.chars },
      on: `${p2}/canvas/1#xywh=${l.box}`,
    })),
  });
  const v2Canvas = (
    n: number,
    size: { width: number; height: number },
    service: string,
    level: number,
    extra = {},
  ) => ({
    '@id': `${p2}/canvas/${n}`,
    '@type': 'sc:Canvas',
    label: `p. ${n}`,
    ...size,
    images: [
      {
        '@type': 'oa:Annotation',
        motivation: 'sc:painting',
        resource: {
          '@id': `${origin}/${service}/full/full/0/default.jpg`,
          '@type': 'dctypes:Image',
          format: 'image/jpeg',
          ...size,
          service: {
            '@context': 'http://iiif.io/api/image/2/context.json',
            '@id': `${origin}/${service}`,
            profile: `http://iiif.io/api/image/2/level${level}.json`,
          },
        },
        on: `${p2}/canvas/${n}`,
      },
    ],
    ...extra,
  });
  await put(dir, 'p2/manifest.json', {
    '@context': 'http://iiif.io/api/presentation/2/context.json',
    '@id': `${p2}/manifest.json`,
    '@type': 'sc:Manifest',
    label: 'Two printed pages',
    metadata: [
      { label: 'Author', value: [{ '@value': 'Marx, Karl', '@language': 'en' }] },
      { label: 'Date', value: '1888' },
    ],
    sequences: [
      {
        '@type': 'sc:Sequence',
        canvases: [
          v2Canvas(1, sizes.manifesto, 'iiif2/manifesto', 0, {
            otherContent: [{ '@id': `${p2}/list/manifesto.json`, '@type': 'sc:AnnotationList' }],
          }),
          v2Canvas(2, sizes.kant, 'iiif2/kant', 1),
        ],
      },
    ],
  });

  // Its second canvas paints an image the server does not have: found only once the first
  // canvas's image is stored.
  await put(dir, 'broken/manifest.json', {
    '@context': 'http://iiif.io/api/presentation/3/context.json',
    id: `${origin}/broken/manifest.json`,
    type: 'Manifest',
    label: en('Broken'),
    items: ['bismarck', 'missing'].map((name, i) => ({
      id: `${origin}/broken/canvas/${i + 1}`,
      type: 'Canvas',
      ...sizes.bismarck,
      items: [painted(i + 1, `${origin}/images/${name}.tif`, sizes.bismarck, 'image/tiff')],
    })),
  });

  if (manyCanvases > 0) {
    await put(dir, 'many/manifest.json', {
      '@context': 'http://iiif.io/api/presentation/3/context.json',
      id: `${origin}/many/manifest.json`,
      type: 'Manifest',
      label: en('Many'),
      items: Array.from({ length: manyCanvases }, (_, i) => ({
        id: `${origin}/many/canvas/${i + 1}`,
        type: 'Canvas',
        ...sizes.bismarck,
        items: [painted(i + 1, `${origin}/images/bismarck.tif`, sizes.bismarck, 'image/tiff')],
      })),
    });
  }
}

async function target(dir: string, relative: string): Promise<string> {
  const file = path.join(dir, relative);
  await mkdir(path.dirname(file), { recursive: true });
  return file;
}
