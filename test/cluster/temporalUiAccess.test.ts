import { Connection } from '@temporalio/client';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { temporalTlsConfig } from '../../scripts/lib/clusterTls';
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

/**
 * Signs in at the UI through the provider's login page, opens the schedules page, and
 * returns what the UI's API answered there (every `/api/v1/namespaces…` call, by status).
 */
async function uiAs(person: { email: string; password: string }) {
  const context = await browser.newContext();
  const page: Page = await context.newPage();
  const ui = cluster.cluster.uiUrl as string;
  const answers: Array<{ status: number; url: string; body: string }> = [];
  page.on('response', async (response) => {
    if (!response.url().includes('/api/v1/namespaces')) return;
    answers.push({
      status: response.status(),
      url: response.url(),
      body: await response.text().catch(() => ''),
    });
  });
  await page.goto(`${ui}/auth/sso`);
  await page.getByLabel('Username').fill(person.email);
  await page.getByLabel('Password').fill(person.password);
  await page.getByRole('button', { name: 'Log in' }).click();
  await page.waitForURL((url) => url.origin === new URL(ui).origin, { timeout: 60_000 });
  await page.goto(`${ui}/namespaces/default/schedules`);
  // Either the schedules arrive, or the UI gives up and sends the person back to its login.
  await eventually(
    async () =>
      answers.some((a) => a.url.includes('/schedules') && a.status === 200) ||
      page.url().includes('/login')
        ? true
        : undefined,
    60_000,
    250,
  );
  await page.waitForLoadState('networkidle').catch(() => {});
  const result = { answers: [...answers], url: page.url() };
  await context.close();
  return result;
}

describe('the Temporal UI is the operators’ (R4)', () => {
  it('R4 a workspace session cannot reach the Temporal UI in cluster mode, an operator session can', async () => {
    // The worker reached the authorizing frontend with its own client's token: the
    // maintenance schedules exist (read through the internal frontend, with the server's own
    // certificate, X7).
    const internal = await Connection.connect({
      address: cluster.cluster.temporalInternalAddress,
      tls: temporalTlsConfig(cluster.cluster.temporalTls, 'internode'),
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
    const asOperator = await uiAs(operator!);
    const schedules = asOperator.answers.find((a) => a.url.includes('/schedules'));
    expect(schedules?.status).toBe(200);
    expect(schedules?.body).toContain('quire-reconciler');

    // The member signs in at the same provider and the UI lets them in; the frontend does not:
    // every namespace call is refused and the UI sends them back to its login page.
    const asMember = await uiAs(MEMBER);
    expect(asMember.answers.length).toBeGreaterThan(0);
    expect(asMember.answers.every((a) => a.status === 403)).toBe(true);
    expect(asMember.answers.some((a) => a.body.includes('quire-reconciler'))).toBe(false);
    expect(asMember.url).toContain('/login');
  }, 300_000);

  it('R4 the frontend refuses a call without a token and one with a forged token', async () => {
    const address = cluster.cluster.temporalAddress;
    // With a certificate of the installation's (X7), so that the token is what is refused.
    const tls = temporalTlsConfig(cluster.cluster.temporalTls, 'client');
    const anonymous = await Connection.connect({ address, tls });
    await expect(
      anonymous.workflowService.listSchedules({ namespace: 'default' }),
    ).rejects.toMatchObject({ code: 7 }); // PERMISSION_DENIED
    await anonymous.close();
    // A token of the right shape that no key of the provider signed.
    const forgedClaims = Buffer.from(
      JSON.stringify({ sub: 'x', permissions: ['temporal-system:admin'], exp: 4_102_444_800 }),
    ).toString('base64url');
    // The frontend maps a token's claims before anything else, so even its health check
    // refuses the forged one: the connection cannot be made.
    const forged = Connection.connect({
      address,
      tls,
      apiKey: `${Buffer.from('{"alg":"RS256","kid":"forged"}').toString('base64url')}.${forgedClaims}.c2ln`,
    });
    await expect(forged).rejects.toMatchObject({ cause: { code: 7 } }); // PERMISSION_DENIED
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
