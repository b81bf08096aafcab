import { manifestUriFor } from '@quire/core/interchange/manifest';
import { MiradorViewer } from '@quire/web/components/MiradorViewer';
import { config } from '@quire/web/lib/server';
import Link from 'next/link';
import { loadItem } from '../item';

export const dynamic = 'force-dynamic';

export async function generateMetadata({ params }: { params: Promise<{ itemId: string }> }) {
  const { item } = await loadItem((await params).itemId);
  return { title: `${item.title ?? 'Untitled item'} in the viewer · Quire` };
}

/**
 * F7 (with I1, I4): the item in Mirador, for anyone signed in to its workspace (every role
 * reads): the manifest Quire serves at `/iiif/{ws}/{item}/manifest`, fetched same-origin with
 * the console's session, so a draft shows as it stands now; the pages deep-zoom through the
 * Image API and the transcript lines are listed as the canvases' annotations. Anyone else is
 * sent to sign in (and the manifest of a draft answers them 404).
 */
export default async function ItemViewerPage({ params }: { params: Promise<{ itemId: string }> }) {
  const { principal, item } = await loadItem((await params).itemId);
  const name = item.title ?? 'Untitled item';
  const itemHref = `/items/${encodeURIComponent(item.id)}`;
  return (
    <main className="wide viewer-page">
      <nav aria-label="Breadcrumb" className="crumbs">
        <Link href="/">Archive</Link> <span aria-hidden="true">/</span>{' '}
        <Link href={itemHref}>{name}</Link> <span aria-hidden="true">/</span>{' '}
        <span aria-current="page">Viewer</span>
      </nav>
      <h1>{name}</h1>
      <MiradorViewer
        manifestId={manifestUriFor(config().QUIRE_PUBLIC_URL, principal.workspaceId, item.id)}
        label={`${name} in the IIIF viewer`}
      />
    </main>
  );
}
