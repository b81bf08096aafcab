import { type ActorView, actorDisplay } from '@quire/core/actor';

/**
 * R7: a person (or key) who acted, by name; the account or key id stays underneath, in the
 * title a pointer shows and in `data-actor` (`account:7`) for whoever reads the page's HTML.
 */
export function ActorName({ actor }: { actor: ActorView }) {
  const shown = actorDisplay(actor);
  return (
    <span className="actor" title={shown.title ?? undefined} data-actor={shown.ref ?? undefined}>
      {shown.name}
    </span>
  );
}
