import { z } from 'zod';
import { intFrom, trimmedOptional } from './settingKinds';
import { parseTrustedProxies } from './trustedProxies';

/**
 * The settings of people (R1-R4, R9, X4): sessions, sign-in limits, trusted proxies,
 * invitations, mail and single sign-on. Part of the one configuration, core/config.ts, which
 * validates them with the rest at start.
 */

const oidcRoleMapping = z.object({
  claim: z.string().min(1).max(100).default('groups'),
  workspaces: z
    .record(
      z.string().min(1),
      z.record(
        z.string().regex(/^[1-9][0-9]{0,15}$/),
        z.enum(['owner', 'editor', 'reviewer', 'viewer']),
      ),
    )
    .default({}),
  operators: z.array(z.string().min(1)).default([]),
});

export const PEOPLE_SETTINGS = {
  /** R3: a console session ends after this long without a request (seconds; default 12 h). */
  QUIRE_SESSION_IDLE_SECONDS: intFrom(10, 30 * 86_400, 12 * 3_600),
  /** R3: and this long after sign-in, however busy (seconds; default 7 days). */
  QUIRE_SESSION_ABSOLUTE_SECONDS: intFrom(10, 365 * 86_400, 7 * 86_400),
  /**
   * R2, X4: failed sign-ins of one account from one address within the window before each
   * further try from there waits (web/services/signinDelay.ts); other addresses are not slowed.
   */
  QUIRE_SIGNIN_MAX_FAILURES_PER_ACCOUNT: intFrom(1, 1_000, 5),
  /** R2, X4: failed sign-ins from one address within the window (every account together). */
  QUIRE_SIGNIN_MAX_FAILURES_PER_ADDRESS: intFrom(1, 100_000, 20),
  QUIRE_SIGNIN_WINDOW_SECONDS: intFrom(1, 86_400, 900),
  /** X4: the first wait past a limit (ms); it doubles with each further failure. */
  QUIRE_SIGNIN_DELAY_MS: intFrom(10, 600_000, 2_000),
  /** X4: the longest wait between tries (seconds). */
  QUIRE_SIGNIN_MAX_DELAY_SECONDS: intFrom(1, 86_400, 900),
  /**
   * X4: proxies whose X-Forwarded-For is believed (addresses or CIDRs, comma-separated; see
   * core/trustedProxies.ts). Unset: none, the socket's peer is the client.
   */
  QUIRE_TRUSTED_PROXIES: z
    .string()
    .default('')
    .superRefine((value, ctx) => {
      try {
        parseTrustedProxies(value);
      } catch (error) {
        ctx.addIssue({ code: 'custom', message: (error as Error).message });
      }
    }),
  /** R1: how long an invitation link stays valid (seconds; default 7 days). */
  QUIRE_INVITATION_SECONDS: intFrom(60, 90 * 86_400, 7 * 86_400),
  /**
   * R9: the installation's mail server (`smtp://host:port`, `smtps://user:password@host`), for
   * password resets and notices. Unset: no mail is sent.
   */
  QUIRE_SMTP_URL: trimmedOptional.pipe(
    z
      .string()
      .url()
      .refine((url) => /^smtps?:\/\//.test(url), 'QUIRE_SMTP_URL is smtp:// or smtps://')
      .optional(),
  ),
  /**
   * R9: the web address of the development mail sink (Mailpit) that `npm start` runs and sets
   * this to; the console links to it so a developer reads the mail Quire sent. Unset in an
   * installation, where mail goes to real mailboxes.
   */
  QUIRE_DEV_MAIL_URL: trimmedOptional.pipe(z.string().url().optional()),
  /** R9: the address Quire's mail comes from. */
  QUIRE_MAIL_FROM: z.string().trim().email().default('quire@localhost.localdomain'),
  /** R9: how long a password reset link stays valid (seconds; default one hour). */
  QUIRE_PASSWORD_RESET_SECONDS: intFrom(60, 86_400, 3_600),
  /**
   * R2: the installation's OpenID Connect provider (its issuer URL). Unset: local accounts
   * only. With it, QUIRE_OIDC_CLIENT_ID and QUIRE_OIDC_CLIENT_SECRET; the redirect URI is
   * `<QUIRE_PUBLIC_URL>/signin/oidc/callback`.
   */
  QUIRE_OIDC_ISSUER: trimmedOptional.pipe(z.string().url().optional()),
  QUIRE_OIDC_CLIENT_ID: trimmedOptional,
  /** Never logged. */
  QUIRE_OIDC_CLIENT_SECRET: trimmedOptional,
  /** The label of the sign-in button. */
  QUIRE_OIDC_NAME: z.string().min(1).max(60).default('single sign-on'),
  /**
   * R2: how the provider's claims become memberships, JSON. `claim` names the claim holding
   * the groups (default `groups`); `workspaces` maps a group to `{workspace id: role}`;
   * `operators` lists the groups whose people are operators of the installation (R4).
   * Example: `{"claim":"groups","workspaces":{"editors":{"1":"editor"}},"operators":["ops"]}`.
   */
  QUIRE_OIDC_ROLE_MAPPING: z
    .string()
    .optional()
    .transform((value, ctx) => {
      const fallback = { claim: 'groups', workspaces: {}, operators: [] };
      if (!value?.trim()) return fallback;
      try {
        const parsed = oidcRoleMapping.safeParse(JSON.parse(value));
        if (parsed.success) return parsed.data;
      } catch {}
      ctx.addIssue({
        code: 'custom',
        message:
          'QUIRE_OIDC_ROLE_MAPPING must be JSON {"claim","workspaces":{group:{ws:role}},"operators":[group]}',
      });
      return z.NEVER;
    }),
};
