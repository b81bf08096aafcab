import { ERROR_CODES } from '@quire/core/errorCodes';

export const metadata = { title: 'Not allowed · Quire' };

/**
 * R8: the answer (403) to an act the signed-in role may not take, reached anyway (a server
 * action posted directly, an address typed in): the stable code and its sentence, never an
 * error page. The console does not offer such acts, so a person rarely sees this.
 */
export default function Forbidden() {
  return (
    <main>
      <h1>Not allowed</h1>
      <p role="alert" data-code="forbidden">
        {ERROR_CODES.forbidden.sentence} <span className="muted">(forbidden)</span>
      </p>
    </main>
  );
}
