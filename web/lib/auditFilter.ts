import { AUDIT_ACTIONS, type AuditFilter } from '@quire/db/auditLog';
import { z } from 'zod';

/**
 * R10: the audit log's filter, spelled once for the console's audit page and the HTTP API's
 * GET .../audit: a person (`account:7`, or `apiKey:3` for a workspace key), an action, and a
 * span of UTC days (`from` and `to`, both inclusive, `YYYY-MM-DD`).
 */
const PERSON = /^(account|apiKey):([1-9][0-9]{0,15})$/;
const DAY = /^\d{4}-\d{2}-\d{2}$/;

/** A real calendar day (`2026-02-30` is not one). */
const isDay = (raw: string) => {
  if (!DAY.test(raw)) return false;
  const day = new Date(`${raw}T00:00:00Z`);
  return !Number.isNaN(day.getTime()) && day.toISOString().slice(0, 10) === raw;
};

const day = (name: string) =>
  z
    .string()
    .refine(isDay, `${name} is a day, YYYY-MM-DD`)
    .optional()
    .describe(`${name === 'from' ? 'First' : 'Last'} UTC day of the span (inclusive), YYYY-MM-DD.`);

export const auditFilterFields = {
  person: z
    .string()
    .regex(PERSON, 'person is account:<id> or apiKey:<id>')
    .optional()
    .describe('Only the acts of this person: account:<accountId>, or apiKey:<keyId>.'),
  action: z
    .enum(AUDIT_ACTIONS)
    .optional()
    .describe('Only this action (member.invite, page.edit, job.start, ...).'),
  from: day('from'),
  to: day('to'),
};

/** `from` after `to` is a span of no day: refused, not answered empty. */
export const auditSpanInOrder = (query: { from?: string; to?: string }) =>
  !query.from || !query.to || query.from <= query.to;

export interface AuditFilterQuery {
  person?: string;
  action?: string;
  from?: string;
  to?: string;
}

/**
 * The filter of a query already checked by the schema (the API), or of a form's values (the
 * console), where a value that is not one of the shapes above narrows nothing.
 */
export function auditFilterOf(query: AuditFilterQuery): AuditFilter {
  const person = PERSON.exec(query.person ?? '');
  const action = auditFilterFields.action.safeParse(query.action);
  const next = (raw: string) => {
    const after = new Date(`${raw}T00:00:00Z`);
    after.setUTCDate(after.getUTCDate() + 1);
    return after;
  };
  return {
    actor: person ? { kind: person[1] as 'account' | 'apiKey', id: Number(person[2]) } : undefined,
    action: action.success ? action.data : undefined,
    from: query.from && isDay(query.from) ? new Date(`${query.from}T00:00:00Z`) : undefined,
    to: query.to && isDay(query.to) ? next(query.to) : undefined,
  };
}
