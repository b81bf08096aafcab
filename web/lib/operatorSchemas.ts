import { KNOWN_PROVIDERS } from '@quire/core/providerCatalogue';
import { z } from 'zod';
import { auditFilterFields, auditSpanInOrder } from './auditFilter';

/**
 * M1/M4: the request schemas of `/api/v1/operator/...`, shared by the route handlers and the
 * OpenAPI document. Shapes only: bounds the domain judges (a provider's name) are 422s from
 * db/operatorControls.ts.
 */
const micros = z.number().int().min(0).max(Number.MAX_SAFE_INTEGER).nullable();

export const workspaceControlsBody = z
  .object({
    dailyBudgetMicros: micros
      .optional()
      .describe('Daily spend budget in micro-units (UTC day); null lifts it.'),
    quotaBytes: micros.optional().describe('Bytes the workspace may store; null lifts it.'),
    activeJobCap: z
      .number()
      .int()
      .min(1)
      .max(100_000)
      .nullable()
      .optional()
      .describe('Jobs running at once; more wait pending, in order. Null lifts it.'),
    enabledProviders: z
      .array(z.string().min(1).max(64))
      .max(KNOWN_PROVIDERS.length * 2)
      .nullable()
      .optional()
      .describe('Providers its jobs may use; null is every provider the installation has.'),
  })
  .strict()
  .refine((body) => Object.keys(body).length > 0, { message: 'name at least one control' });

export const installationControlsBody = z
  .object({
    dailyBudgetMicros: micros.optional().describe('Global daily budget; null lifts it.'),
    quotaBytes: micros
      .optional()
      .describe('Bytes all workspaces may store; null falls back to QUIRE_GLOBAL_QUOTA_BYTES.'),
  })
  .strict()
  .refine((body) => Object.keys(body).length > 0, { message: 'name at least one control' });

const auditFields = {
  workspaceId: z.coerce.number().int().positive().optional(),
  before: z.coerce.number().int().positive().optional().describe('Entries with ids below this.'),
  pageSize: z.coerce.number().int().min(1).max(200).default(50),
  // R10: narrowed to a person, an action and a span of days, as the console's audit page is.
  ...auditFilterFields,
};
const spanMessage = { message: 'from is a day on or before to', path: ['from'] };

export const auditQuery = z.object(auditFields).refine(auditSpanInOrder, spanMessage);

const { workspaceId: _, ...workspaceAuditFields } = auditFields;
export const workspaceAuditQuery = z
  .object(workspaceAuditFields)
  .refine(auditSpanInOrder, spanMessage);

/** R3: the installation's accounts, searched by email or name, paged by id. */
export const accountsQuery = z.object({
  q: z.string().max(200).optional().describe('Only accounts whose email or name holds this.'),
  after: z.coerce
    .number()
    .int()
    .positive()
    .optional()
    .describe('Accounts with ids above this (`nextAfterId` of the page before).'),
});

/** R3: disable an account (every session of it ends at once) or enable it again. */
export const accountBody = z
  .object({
    disabled: z.boolean().describe('true disables the account and ends its sessions.'),
  })
  .strict();
