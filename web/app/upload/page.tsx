import { Uploader } from '@quire/web/components/Uploader';
import { requirePrincipal } from '@quire/web/lib/session';

export const metadata = { title: 'Upload · Quire' };
export const dynamic = 'force-dynamic';

export default async function UploadPage() {
  await requirePrincipal();
  return (
    <main>
      <div className="page-head">
        <div>
          <h1>Upload</h1>
          <p className="muted">
            Every file becomes a page with a transcription job. Files are checked by their contents;
            a batch is stored whole or not at all. An image that already has a transcript from
            another tool takes it beside it (PAGE XML or ALTO): its lines become the page's first
            revision and no job is started for it.
          </p>
        </div>
      </div>
      <aside className="notice engine-note" aria-label="Which engine reads your files">
        <strong>Which engine reads your files.</strong> Page images go to tesseract (printed text;
        for Fraktur ask for the <code>frk</code> language). Recordings go to the built-in offline
        speech engine, which reads clear speech but is <strong>weak on real recordings</strong>{' '}
        (about two words in three right on a 1961 speech). For interviews and sessions, an operator
        can connect a Whisper-compatible server (<code>QUIRE_WHISPER_BASE_URL</code>) and jobs can
        use the <code>whisper</code> provider.
      </aside>
      <Uploader />
    </main>
  );
}
