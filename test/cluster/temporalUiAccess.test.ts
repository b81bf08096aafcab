import { Connection } from '@temporalio/client';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser } from '../support/browser';
import { startTestCluster, type TestCluster } from '../support/cluster';
import { eventually } from '../support/wait';

/**
 * R4: the orchestration layer is the operators'. In cluster mode the Temporal UI signs people
 * in at the installation's identity provider (Ory Hydra here), and the Temporal frontend
 * itself checks every call's JWT: an operator's token carries Temporal permissions, anyone
 * else's carries none. So a workspace member who signs in at the UI sees nothing of any
 * workspace, an operator sees the installation's schedules and jobs, and a caller without a
 * token, or with a forged one, is refused by the frontend, whatever reaches its port.
 */
const MEMBER = {
  email: 'editor@quire.localhost',
  name: 'Workspace editor',
  password: 'member-password-0123',
  groups: ['editors'],
};

let cluster: TestCluster;
let browser: Browser;

beforeAll(async () => {
  cluster = await startTestCluster({
    workers: 1,
    webReplicas: 0,
    ui: true,
    identityPeople: [MEMBER],
  });
  browser = await launchBrowser();
}, 900_000);

afterAll(async () => {
  await browser?.close();
  await cluster?.close();
});

/** Signs in at the UI through the provider's login page; the UI's own schedules request. */
async function schedulesAs(person: { email: string; password: string }) {
  const context = await browser.newContext();
  const page: Page = await context.newPage();
  const ui = cluster.cluster.uiUrl as string;
  await page.goto(`${ui}/auth/sso`);
  await page.getByLabel('Username').fill(person.email);
  await page.getByLabel('Password').fill(person.password);
  await page.getByRole('button', { name: 'Log in' }).click();
  await page.waitForURL((url) => url.origin === new URL(ui).origin, { timeout: 60_000 });
  const answered = page.waitForResponse(
    (response) => response.url().includes('/api/v1/namespaces/default/schedules'),
    { timeout: 60_000 },
  );
  await page.goto(`${ui}/namespaces/default/schedules`);
  const response = await answered;
  const result = { status: response.status(), body: await response.text() };
  await context.close();
  return result;
}

describe('the Temporal UI is the operators’ (R4)', () => {
  it('R4 a workspace session cannot reach the Temporal UI in cluster mode, an operator session can', async () => {
    // The worker reached the authorizing frontend with its own client's token: the
    // maintenance schedules exist.
    const internal = await Connection.connect({
      address: cluster.cluster.temporalAddress.replace(/:(\d+)$/, (_, p) => `:${Number(p) + 17}`),
    });
    await eventually(
      async () => {
        const listed = await internal.workflowService.listSchedules({ namespace: 'default' });
        return listed.schedules?.some((s) => s.scheduleId === 'quire-reconciler')
          ? true
          : undefined;
      },
      120_000,
      500,
    );
    await internal.close();

    const operator = cluster.cluster.identity?.operator;
    expect(operator).toBeDefined();
    const asOperator = await schedulesAs(operator!);
    expect(asOperator.status).toBe(200);
    expect(asOperator.body).toContain('quire-reconciler');

    // The member signs in at the same provider and the UI lets them in; the frontend does not.
    const asMember = await schedulesAs(MEMBER);
    expect(asMember.status).toBe(403);
    expect(asMember.body).not.toContain('quire-reconciler');
  }, 300_000);

  it('R4 the frontend refuses a call without a token and one with a forged token', async () => {
    const address = cluster.cluster.temporalAddress;
    const anonymous = await Connection.connect({ address });
    await expect(
      anonymous.workflowService.listSchedules({ namespace: 'default' }),
    ).rejects.toMatchObject({ code: 7 }); // PERMISSION_DENIED
    await anonymous.close();
    // A token of the right shape that no key of the provider signed.
    const forgedClaims = Buffer.from(
      JSON.stringify({ sub: 'x', permissions: ['temporal-system:admin'], exp: 4_102_444_800 }),
    ).toString('base64url');
    const forged = await Connection.connect({
      address,
      tls: false,
      apiKey: `${Buffer.from('{"alg":"RS256","kid":"forged"}').toString('base64url')}.${forgedClaims}.c2ln`,
    });
    await expect(
      forged.workflowService.listSchedules({ namespace: 'default' }),
    ).rejects.toMatchObject({ code: 7 });
    await forged.close();
    // Through the UI's API without a signed-in person: no token, no answer.
    const ui = cluster.cluster.uiUrl as string;
    const unauthenticated = await fetch(`${ui}/api/v1/namespaces/default/schedules`);
    expect(unauthenticated.status).toBe(401);
    const bearer = await fetch(`${ui}/api/v1/namespaces/default/schedules`, {
      headers: { authorization: 'Bearer not-a-token' },
    });
    expect([401, 403]).toContain(bearer.status);
  }, 60_000);
});
