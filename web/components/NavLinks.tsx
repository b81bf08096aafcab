'use client';
import Link from 'next/link';
import { usePathname } from 'next/navigation';

const LINKS = [
  // F4: the archive is home; jobs, batches and operations stay one click away.
  { href: '/', label: 'Archive' },
  { href: '/search', label: 'Search' },
  { href: '/jobs', label: 'Jobs' },
  { href: '/upload', label: 'Upload' },
  { href: '/batches', label: 'Batches' },
  { href: '/review', label: 'Review' },
  { href: '/providers', label: 'Providers' },
  { href: '/webhooks', label: 'Webhooks' },
  { href: '/operations', label: 'Operations' },
  { href: '/audit', label: 'Audit' },
];
const OWNER_LINKS = [{ href: '/members', label: 'Members' }];
const OPERATOR_LINKS = [
  { href: '/operator', label: 'Operator' },
  // R3: disabling and enabling the installation's accounts.
  { href: '/operator/accounts', label: 'Accounts' },
];

/** The main navigation; the current section is marked for sight and for screen readers. */
export function NavLinks({
  temporalUiUrl,
  operator = false,
  owner = false,
}: {
  /** R4: given to operator sessions only; the Temporal UI is the operators'. */
  temporalUiUrl?: string;
  /** M1: an operator session sees the operator view, not a workspace's pages. */
  operator?: boolean;
  /** R1: owners manage members and keys. */
  owner?: boolean;
}) {
  const pathname = usePathname() ?? '';
  const links = operator ? OPERATOR_LINKS : owner ? [...LINKS, ...OWNER_LINKS] : LINKS;
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
              <Link href={link.href} aria-current={current ? 'page' : undefined}>
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
