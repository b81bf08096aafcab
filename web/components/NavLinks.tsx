'use client';
import type { Action } from '@quire/core/roles';
import Link from 'next/link';
import { usePathname } from 'next/navigation';

interface NavLink {
  href: string;
  label: string;
  /** R8: shown only to a role that may take this act (core/roles.ts). */
  act?: Action;
}

const LINKS: NavLink[] = [
  // F4: the archive is home; jobs, batches and operations stay one click away.
  { href: '/', label: 'Archive' },
  { href: '/search', label: 'Search' },
  { href: '/jobs', label: 'Jobs' },
  { href: '/upload', label: 'Upload', act: 'batch.create' },
  { href: '/batches', label: 'Batches' },
  { href: '/review', label: 'Review' },
  { href: '/providers', label: 'Providers' },
  { href: '/webhooks', label: 'Webhooks' },
  { href: '/operations', label: 'Operations' },
  { href: '/audit', label: 'Audit' },
  // R1: owners manage members and keys.
  { href: '/members', label: 'Members', act: 'member.invite' },
];
const OPERATOR_LINKS: NavLink[] = [
  { href: '/operator', label: 'Operator' },
  // R3: disabling and enabling the installation's accounts.
  { href: '/operator/accounts', label: 'Accounts' },
];

/** The main navigation; the current section is marked for sight and for screen readers. */
export function NavLinks({
  temporalUiUrl,
  operator = false,
  allowed = [],
}: {
  /** R4: given to operator sessions only; the Temporal UI is the operators'. */
  temporalUiUrl?: string;
  /** M1: an operator session sees the operator view, not a workspace's pages. */
  operator?: boolean;
  /** R8: the acts the signed-in role may take; a link to an act outside them is not shown. */
  allowed?: readonly Action[];
}) {
  const pathname = usePathname() ?? '';
  const links = operator
    ? OPERATOR_LINKS
    : LINKS.filter((link) => !link.act || allowed.includes(link.act));
  const under = (href: string) => pathname === href || pathname.startsWith(`${href}/`);
  // A section inside another (/operator/accounts in /operator) is the current one, not both.
  const deeper = (href: string) =>
    links.some((l) => l.href !== href && l.href.startsWith(`${href}/`) && under(l.href));
  return (
    <nav aria-label="Main" className="mainnav">
      <ul>
        {links.map((link) => {
          const current =
            !deeper(link.href) &&
            (pathname === link.href ||
              (link.href !== '/' && pathname.startsWith(`${link.href}/`)) ||
              (link.href === '/' &&
                (pathname.startsWith('/collections/') || pathname.startsWith('/items/'))) ||
              (link.href === '/jobs' && pathname.startsWith('/pages/')));
          return (
            <li key={link.href}>
              <Link
                href={link.href}
                aria-current={current ? 'page' : undefined}
                data-act={link.act}
              >
                {link.label}
              </Link>
            </li>
          );
        })}
        {operator && temporalUiUrl ? (
          <li>
            <a href={temporalUiUrl} target="_blank" rel="noreferrer">
              Temporal UI<span className="sr-only"> (opens in a new tab)</span>
            </a>
          </li>
        ) : null}
      </ul>
    </nav>
  );
}
