import { describe, expect, it } from 'vitest';
import { databaseOfTitle } from '../../bench/lib/cpu';

/** P6: bench/ocr splits PostgreSQL's CPU by the database each backend serves. */
describe('PostgreSQL process titles (P6 bench)', () => {
  it('P6 a backend is counted under its database, with or without a cluster name', () => {
    expect(databaseOfTitle('postgres: postgres quire 127.0.0.1(54321) idle')).toBe('quire');
    expect(
      databaseOfTitle('postgres: 15/main: postgres temporal_visibility 127.0.0.1(40112) SELECT '),
    ).toBe('temporal_visibility');
    expect(databaseOfTitle('postgres: quire temporal [local] idle in transaction')).toBe(
      'temporal',
    );
  });

  it("P6 the server's own processes are no database's", () => {
    for (const title of [
      'postgres: checkpointer ',
      'postgres: 15/main: walwriter ',
      'postgres: autovacuum launcher ',
      'postgres: logical replication launcher ',
      'postgres: parallel worker for PID 4242 ',
      '/usr/lib/postgresql/15/bin/postgres -D /tmp/data -p 5433',
    ])
      expect(databaseOfTitle(title)).toBeUndefined();
  });
});
