import { Uploader } from '../../components/Uploader';
import { requirePrincipal } from '../../lib/session';

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
            a batch is stored whole or not at all.
          </p>
        </div>
      </div>
      <Uploader />
    </main>
  );
}
