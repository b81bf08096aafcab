import { MEASURED_QUALITY, werInWords } from '@quire/core/engineQuality';
import { listCollectionChoices } from '@quire/db/collections';
import { getWorkspace } from '@quire/db/workspaces';
import { IiifImportForm } from '@quire/web/components/IiifImportForm';
import { InstalledModels } from '@quire/web/components/InstalledModels';
import { Uploader } from '@quire/web/components/Uploader';
import { engineModels, pool } from '@quire/web/lib/server';
import { requireAct } from '@quire/web/lib/session';

const SPEECH = MEASURED_QUALITY.pocketsphinx;

export const metadata = { title: 'Upload · Quire' };
export const dynamic = 'force-dynamic';

export default async function UploadPage() {
  // R8: a role that may not upload gets the refusal, not a form it cannot send.
  const principal = await requireAct('batch.create');
  const workspace = await getWorkspace(pool(), principal.workspaceId);
  const collections = await listCollectionChoices(pool(), principal.workspaceId);
  const models = engineModels();
  return (
    <main>
      <div className="page-head">
        <div>
          <h1>Upload</h1>
          <p className="muted">
            Every file becomes a page with a transcription job. Files are checked by their contents;
            a batch is stored whole or not at all. An image that already has a transcript from
            another tool takes it beside it (PAGE XML, ALTO or hOCR): its lines become the page's
            first revision and no job is started for it.
          </p>
        </div>
      </div>
      <aside className="notice engine-note" aria-label="Which engine reads your files">
        <strong>Which engine reads your files.</strong> Page images go to tesseract, in English
        unless you choose another model below (for Fraktur, choose <code>frk</code>). Recordings go
        to the built-in offline speech engine, which reads clear speech but is{' '}
        <strong>weak on real recordings</strong> (measured word error rate {SPEECH.wer} on{' '}
        {SPEECH.set}: {werInWords(SPEECH.wer)}). For interviews and sessions, an operator can
        connect a Whisper-compatible server (<code>QUIRE_WHISPER_BASE_URL</code>) and jobs can use
        the <code>whisper</code> provider.
      </aside>
      <p className="notice" data-testid="recording-retention">
        <strong>Recordings.</strong>{' '}
        {workspace?.recordingRetention === 'delete-after-recognition'
          ? 'This workspace deletes its copy of each recording as soon as the speech engine holds it (delete-after-recognition): no one can play a line back afterwards.'
          : 'This workspace keeps its recordings (keep), under its storage quota, so each line can be played back to check it.'}
      </p>
      <Uploader models={models} collections={collections} />
      <IiifImportForm collections={collections} />
      <InstalledModels models={models} />
    </main>
  );
}
