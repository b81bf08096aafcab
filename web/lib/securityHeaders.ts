/**
 * R6: the Content-Security-Policy of every response (no I/O). web/proxy.ts sets the pages'
 * policy; next.config.ts the data responses'.
 *
 * Pages: scripts only from the console itself and inline scripts only with this response's
 * nonce (Next reads the nonce from the request's policy and puts it on its own inline
 * scripts); `'strict-dynamic'` lets those scripts load the chunks they import. Styles come
 * from the console's stylesheet (and inline style elements with the nonce); no `style`
 * attributes, so no `'unsafe-inline'` anywhere. Images, audio and fetches only from the
 * console (page images through its own Image API, `/iiif/{ws}/image/...`, V7; recordings at
 * `/console-api/.../media`). No frames in, none out.
 *
 * Everything else (the API's JSON, export downloads, IIIF manifests, canvases and images) is
 * data, not a document: `default-src 'none'` with `sandbox`, so a download opened as a page
 * runs nothing, and `frame-ancestors 'none'`. Viewers such as Mirador fetch manifests (CORS)
 * and draw images (`<img>`); neither is a frame, so neither is affected.
 */

export function pagePolicy(nonce: string, development = false): string {
  return [
    "default-src 'self'",
    `script-src 'self' 'nonce-${nonce}' 'strict-dynamic'${development ? " 'unsafe-eval'" : ''}`,
    `style-src 'self' 'nonce-${nonce}'`,
    "img-src 'self' data: blob:",
    "media-src 'self' blob:",
    "font-src 'self'",
    "connect-src 'self'",
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-src 'none'",
    "frame-ancestors 'none'",
  ].join('; ');
}

/** Also written out in next.config.ts, which Next loads alone (a unit test checks they agree). */
export const DATA_POLICY = "default-src 'none'; frame-ancestors 'none'; sandbox";
