'use client';
import type { MiradorInstance } from 'mirador';
import { useEffect, useId, useState } from 'react';

/**
 * F7: Mirador in a frame of the page. It is the project's own `mirador` package (its ES build,
 * bundled by Next with the console's React in production mode, and loaded as a chunk of the
 * console only when this page mounts), never a CDN. It fetches the manifest and the Image
 * API's tiles itself, same-origin, with the console's session cookie.
 *
 * Content-Security-Policy (R6): the page keeps the console's policy unchanged. Scripts: the
 * chunk is loaded by Next's own (nonced) scripts, which `'strict-dynamic'` trusts. Styles:
 * Mirador's MUI styles come from emotion, which writes <style> elements made with
 * `document.createElement` and would give them a nonce only if Mirador passed one (it builds
 * its emotion cache without). While the viewer is mounted, a <style> element made by a script
 * gets the document's nonce as it is created. That hands scripts nothing they lack (any script
 * on the page can read the nonce from the page's own scripts), and markup injected into the
 * page still cannot style it: parsed <style> and `style` attributes are not made by
 * `createElement` and stay refused. React and OpenSeadragon set element styles through the
 * CSSOM, which the policy does not govern. The nonce is the document's own (read from the
 * scripts Next rendered with it), so an in-app navigation here uses the one the browser holds.
 */

/** The nonce this document's policy allows (Next puts it on every script it renders). */
function documentNonce(): string | undefined {
  for (const script of Array.from(document.scripts)) {
    if (script.nonce) return script.nonce;
  }
  return undefined;
}

/** Until the returned function runs, every <style> a script creates carries `nonce`. */
function nonceScriptStyles(nonce: string): () => void {
  const original = Document.prototype.createElement;
  function createElement(this: Document, tagName: string, options?: ElementCreationOptions) {
    const element = original.call(this, tagName, options);
    if (element instanceof HTMLStyleElement && !element.nonce) element.nonce = nonce;
    return element;
  }
  Document.prototype.createElement = createElement as typeof Document.prototype.createElement;
  return () => {
    if (Document.prototype.createElement === createElement) {
      Document.prototype.createElement = original;
    }
  };
}

export function MiradorViewer({ manifestId, label }: { manifestId: string; label: string }) {
  const id = `mirador-${useId().replace(/[^A-Za-z0-9_-]/g, '')}`;
  const [failed, setFailed] = useState(false);

  useEffect(() => {
    const nonce = documentNonce();
    if (!nonce) {
      setFailed(true);
      return;
    }
    let stopped = false;
    let instance: MiradorInstance | undefined;
    const restore = nonceScriptStyles(nonce);
    import('mirador')
      .then((Mirador) => {
        if (stopped) return;
        instance = Mirador.viewer({
          id,
          // Quire's transcript lines are `supplementing` annotations; Mirador lists only the
          // motivations named here.
          annotations: { filteredMotivations: ['oa:commenting', 'commenting', 'supplementing'] },
          window: {
            allowClose: false,
            allowMaximize: false,
            sideBarOpen: true,
            panels: { annotations: true },
            sideBarPanel: 'annotations',
          },
          windows: [{ manifestId }],
          workspace: { showZoomControls: true },
          workspaceControlPanel: { enabled: false },
        });
      })
      .catch(() => {
        if (!stopped) setFailed(true);
      });
    return () => {
      stopped = true;
      instance?.unmount();
      restore();
    };
  }, [id, manifestId]);

  return (
    <section className="viewer-frame" aria-label={label}>
      {failed ? (
        <p role="alert" className="error">
          The viewer could not be loaded. Reload the page to try again.
        </p>
      ) : null}
      <div id={id} className="viewer-mount" />
    </section>
  );
}
