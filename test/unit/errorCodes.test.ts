import { describe, expect, it } from 'vitest';
import { ERROR_CODES, type ErrorCode, isErrorCode } from '../../core/errorCodes';
import { DomainError } from '../../core/errors';
import { ClosedLinkError, MissingReferenceError, NotFoundError } from '../../db/errors';
import { IngestError } from '../../ingest/request';
import { ApiError, httpErrorOf, refusalOf, STATUS_OF_KIND, sentenceOf } from '../../web/lib/errors';

/** SPEC §7: every stable code declared once, with the status of its kind and a sentence. */
describe('the error registry', () => {
  it('gives every code a status and a sentence a person can read', () => {
    for (const [code, entry] of Object.entries(ERROR_CODES)) {
      expect(code).toMatch(/^[a-z][A-Za-z0-9_]*$/);
      expect(STATUS_OF_KIND[entry.kind], code).toBeGreaterThanOrEqual(400);
      expect(entry.sentence, code).toMatch(/^[A-Z].*[.]$/);
    }
  });

  it("answers a refusal with its kind's status and the body {error:{code,message,...details}}", () => {
    const refused = new IngestError('file_too_large', 'file 2 is over 10 bytes', 2);
    expect(httpErrorOf(refused)).toEqual({
      status: 413,
      body: { error: { code: 'file_too_large', message: 'file 2 is over 10 bytes', fileIndex: 2 } },
    });
    const api = new ApiError('too_many_streams', 'at most 4 streams', { 'Retry-After': '5' });
    expect(httpErrorOf(api)).toEqual({
      status: 429,
      body: { error: { code: 'too_many_streams', message: 'at most 4 streams' } },
      headers: { 'Retry-After': '5' },
    });
    expect(httpErrorOf(new Error('boom'))).toBeUndefined();
  });

  it('takes a left-out message from the sentence', () => {
    expect(new DomainError('job_not_found').message).toBe(ERROR_CODES.job_not_found.sentence);
  });

  it("keeps the two statuses that differ from their code's kind, for their stated reasons", () => {
    expect(httpErrorOf(new MissingReferenceError('collection_not_found'))?.status).toBe(422);
    expect(httpErrorOf(new NotFoundError('collection_not_found'))?.status).toBe(404);
    expect(httpErrorOf(new ClosedLinkError('invitation_revoked'))?.status).toBe(404);
  });

  it('tells a person the sentence, the detail where the code carries it, or the fallback', () => {
    expect(refusalOf(new NotFoundError('job_not_found', 'job not found'))).toEqual({
      code: 'job_not_found',
      message: 'That job does not exist.',
    });
    expect(refusalOf(new DomainError('weak_password', 'at least 12 characters')).message).toBe(
      'At least 12 characters.',
    );
    expect(refusalOf(new DomainError('invalid_url', 'url must be https')).message).toBe(
      'URL must be https.',
    );
    expect(refusalOf(new DomainError('invalid_event_types', 'eventTypes: none')).message).toBe(
      'eventTypes: none.',
    );
    expect(refusalOf(new Error('socket hang up'), 'Try again.')).toEqual({
      code: 'internal',
      message: 'Try again.',
    });
    expect(() => refusalOf(new Error('socket hang up'))).toThrow('socket hang up');
  });

  it('says a code sent back to a page, and nothing for a code it does not know', () => {
    const code: ErrorCode = 'collection_not_empty';
    expect(sentenceOf(code)).toBe(ERROR_CODES.collection_not_empty.sentence);
    expect(sentenceOf('no_such_code')).toBeUndefined();
    expect(isErrorCode('toString')).toBe(false);
  });
});
