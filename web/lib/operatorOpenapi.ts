import type { Operation } from './openapiOperation';
import {
  accountBody,
  accountsQuery,
  auditQuery,
  installationControlsBody,
  workspaceAuditQuery,
  workspaceControlsBody,
} from './operatorSchemas';
import { errorBody } from './schemas';

/**
 * M1/M4: the operator routes of the OpenAPI document (`/operator/...`, operator keys only; a
 * workspace key gets 404), and the workspace's own audit rows.
 */
const errors = (codes: number[]) =>
  Object.fromEntries(
    codes.map((c) => [String(c), { description: TEXT[c] ?? 'error', schema: errorBody }]),
  );
const TEXT: Record<number, string> = {
  400: 'malformed JSON or parameters',
  401: 'missing or invalid operator key',
  404: 'not found; every operator route answers 404 to a workspace key',
  415: 'body is not application/json',
  409: 'the account is the acting operator (`cannot_disable_self`)',
  422: 'well-formed but not acceptable (`unknown_provider`, a bound)',
  503: 'Temporal does not answer',
};
const op = '/operator';

export const OPERATOR_OPERATIONS: Operation[] = [
  {
    method: 'get',
    path: `${op}/installation`,
    summary: 'Global budget and quota, spend today and bytes stored across workspaces (M1)',
    tag: 'operator',
    auth: 'operator',
    responses: { '200': { description: 'installation' }, ...errors([401, 404]) },
  },
  {
    method: 'patch',
    path: `${op}/installation`,
    summary: 'Set the global daily budget or byte quota; audited (M4)',
    tag: 'operator',
    auth: 'operator',
    body: installationControlsBody,
    responses: { '200': { description: 'controls' }, ...errors([400, 401, 404, 415, 422]) },
  },
  {
    method: 'get',
    path: `${op}/workspaces`,
    summary: 'Every workspace with its controls, spend, bytes, slots and waiting jobs (M1, M4)',
    tag: 'operator',
    auth: 'operator',
    responses: { '200': { description: 'workspaces' }, ...errors([401, 404]) },
  },
  {
    method: 'get',
    path: `${op}/workspaces/{ws}`,
    summary: "One workspace's controls and figures (M1)",
    tag: 'operator',
    auth: 'operator',
    responses: { '200': { description: 'workspace' }, ...errors([400, 401, 404]) },
  },
  {
    method: 'patch',
    path: `${op}/workspaces/{ws}`,
    summary:
      'Set a workspace budget, byte quota, active-job cap or enabled providers; each field audited (M4)',
    tag: 'operator',
    auth: 'operator',
    body: workspaceControlsBody,
    responses: { '200': { description: 'controls' }, ...errors([400, 401, 404, 415, 422]) },
  },
  {
    method: 'get',
    path: `${op}/providers`,
    summary: 'Provider queue states and spend per provider across workspaces (M1, Q3, B1)',
    tag: 'operator',
    auth: 'operator',
    responses: { '200': { description: 'providers' }, ...errors([401, 404]) },
  },
  {
    method: 'post',
    path: `${op}/providers/{name}/resume`,
    summary: "An operator's Resume of a paused provider; audited (M1, M4, Q3)",
    tag: 'operator',
    auth: 'operator',
    responses: { '200': { description: 'resumed' }, ...errors([401, 404, 503]) },
  },
  {
    method: 'get',
    path: `${op}/operations`,
    summary: 'Alert figures across every workspace, with each workspace share (M1, O3)',
    tag: 'operator',
    auth: 'operator',
    responses: { '200': { description: '{queue, storage, workspaces}' }, ...errors([401, 404]) },
  },
  {
    method: 'get',
    path: `${op}/accounts`,
    summary:
      "The installation's accounts (email, name, operator, disabledAt, workspaces with roles), 50 a page by id, optionally searched by email or name (R3)",
    tag: 'operator',
    auth: 'operator',
    query: accountsQuery,
    responses: { '200': { description: '{accounts, nextAfterId}' }, ...errors([400, 401, 404]) },
  },
  {
    method: 'patch',
    path: `${op}/accounts/{accountId}`,
    summary:
      'Disable an account (every session of it ends at once, on every replica) or enable it again; audited with the operator as actor (R3)',
    tag: 'operator',
    auth: 'operator',
    body: accountBody,
    responses: {
      '200': { description: '{account, endedSessions}' },
      ...errors([400, 401, 404, 409, 415]),
    },
  },
  {
    method: 'get',
    path: `${op}/audit`,
    summary: 'The audit log, newest first (M4)',
    tag: 'operator',
    auth: 'operator',
    query: auditQuery,
    responses: {
      '200': { description: '{entries, nextBeforeId}' },
      ...errors([400, 401, 404]),
    },
  },
  {
    method: 'get',
    path: '/workspaces/{ws}/audit',
    summary:
      "This workspace's audit rows: cancels, re-runs, resumes, publications, member and key changes, operator changes (M4, R5)",
    tag: 'workspaces',
    query: workspaceAuditQuery,
    responses: {
      '200': {
        description:
          "{entries, nextBeforeId}; each entry's actor is {type: 'account'|'apiKey'|'operatorKey'|'cli', id, name} (R5)",
      },
      ...errors([400, 401, 404]),
    },
  },
];
