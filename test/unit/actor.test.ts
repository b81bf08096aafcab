import { describe, expect, it } from 'vitest';
import {
  type Actor,
  actorDisplay,
  actorName,
  actorOfLineAuthor,
  actorView,
  CLI_ACTOR,
  editedByReference,
  lineAuthorOf,
  streamPrincipal,
} from '../../core/actor';

const names = new Map([
  ['account:1', 'Ada Lovelace'],
  ['apiKey:3', 'catalogue sync'],
  ['operatorKey:2', 'on call'],
]);

describe('R7 one actor, shown by name', () => {
  it('R7 every kind of actor is shown by its name, never as an internal reference or "null"', () => {
    const shown: Array<[Actor, string]> = [
      [{ kind: 'account', id: 1 }, 'Ada Lovelace'],
      [{ kind: 'apiKey', id: 3 }, 'catalogue sync'],
      [{ kind: 'operatorKey', id: 2 }, 'on call'],
      [{ kind: 'engine', engine: 'tesseract' }, 'tesseract'],
      [{ kind: 'import' }, 'an imported file'],
      [{ kind: 'cli' }, 'admin CLI'],
    ];
    for (const [actor, name] of shown) expect(actorName(actor, names)).toBe(name);
    // A name kept with the act wins; an account or key not found still reads as words.
    expect(actorName({ kind: 'account', id: 1 }, names, 'Ada King')).toBe('Ada King');
    expect(actorName({ kind: 'account', id: 9 }, names)).toBe('account 9');
    expect(actorName({ kind: 'apiKey', id: 9 }, new Map(), null)).toBe('API key 9');
  });

  it('R5 the API keeps its shapes: actor {type, id, name}, editedBy references, line stamps', () => {
    expect(actorView({ kind: 'apiKey', id: 3 }, names)).toEqual({
      type: 'apiKey',
      id: 3,
      name: 'catalogue sync',
    });
    expect(actorView({ kind: 'cli' }, names)).toEqual({ type: 'cli', id: null, name: 'admin CLI' });
    expect(editedByReference({ kind: 'account', id: 7 }, 'console')).toBe('console:account:7');
    expect(editedByReference({ kind: 'apiKey', id: 3 }, 'api')).toBe('api-key:3');
    expect(lineAuthorOf({ kind: 'apiKey', id: 3 })).toEqual({ kind: 'api-key', id: '3' });
    expect(actorOfLineAuthor(lineAuthorOf({ kind: 'account', id: 7 }))).toEqual({
      kind: 'account',
      id: 7,
    });
    expect(actorOfLineAuthor({ kind: 'engine', id: 'kraken' })).toEqual({
      kind: 'engine',
      engine: 'kraken',
    });
    expect(streamPrincipal({ kind: 'apiKey', id: 3 }, 'api')).toBe('key:3');
    expect(streamPrincipal({ kind: 'apiKey', id: 3 }, 'console')).toBe('console:api-key:3');
  });
});

describe('R7 the display of who acted', () => {
  it('R7 actorDisplay gives the name, with the account or key it names kept beneath (ref and title); engines, imports and the CLI name no row', () => {
    expect(actorDisplay(actorView({ kind: 'account', id: 1 }, names))).toEqual({
      name: 'Ada Lovelace',
      ref: 'account:1',
      title: 'account 1',
    });
    expect(actorDisplay(actorView({ kind: 'apiKey', id: 3 }, names))).toEqual({
      name: 'catalogue sync',
      ref: 'apiKey:3',
      title: 'API key 3',
    });
    expect(actorDisplay(actorView({ kind: 'operatorKey', id: 2 }, names)).title).toBe(
      'operator key 2',
    );
    // A name kept with the act is shown; the id beneath is the row's, not the name's.
    expect(actorDisplay(actorView({ kind: 'account', id: 9 }, names, 'Ada King'))).toEqual({
      name: 'Ada King',
      ref: 'account:9',
      title: 'account 9',
    });
    for (const actor of [{ kind: 'engine', engine: 'kraken' }, { kind: 'import' }, CLI_ACTOR]) {
      const shown = actorDisplay(actorView(actor as Actor, names));
      expect(shown.ref).toBeNull();
      expect(shown.title).toBeNull();
      expect(shown.name).not.toMatch(/null|undefined|:/);
    }
  });
});
