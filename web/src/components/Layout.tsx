import { AppShell, Burger, Button, Group, NavLink, ScrollArea, Text, Title } from '@mantine/core';
import { useDisclosure } from '@mantine/hooks';
import { Suspense } from 'react';
import { NavLink as RouterLink, Outlet, useNavigate } from 'react-router';
import { formatNumber } from '../lib/format';
import { useMe } from '../lib/me';
import { setToken } from '../lib/session';
import { PageLoader } from './PageLoader';
import { TwoFactorGate } from './TwoFactorGate';

interface NavItem {
  to: string;
  label: string;
  adminOnly?: boolean;
}

/** The console's areas, in the order of the sidebar. */
const NAV: NavItem[] = [
  { to: '/', label: 'Dashboard' },
  { to: '/contacts', label: 'Contacts' },
  { to: '/imports', label: 'Import contacts', adminOnly: true },
  { to: '/groups', label: 'Groups' },
  { to: '/templates', label: 'Templates' },
  { to: '/send', label: 'Send' },
  { to: '/campaigns', label: 'Campaigns' },
  { to: '/message-logs', label: 'Message logs' },
  { to: '/outbox', label: 'Sandbox outbox' },
  { to: '/settings/team', label: 'Team', adminOnly: true },
  { to: '/settings/api-keys', label: 'API keys', adminOnly: true },
  { to: '/settings/channels', label: 'Channels', adminOnly: true },
  { to: '/settings/providers', label: 'Providers', adminOnly: true },
  { to: '/settings/suppressions', label: 'Suppressions', adminOnly: true },
  { to: '/settings/dkim-keys', label: 'DKIM keys', adminOnly: true },
  { to: '/settings/webhooks', label: 'Webhooks', adminOnly: true },
  { to: '/settings/tracking', label: 'Tracking', adminOnly: true },
  { to: '/settings/audit-log', label: 'Audit log', adminOnly: true },
  { to: '/profile', label: 'Profile' },
];

/** The frame of every signed-in page: the organization, the sidebar, logout, and the page itself. */
export function Layout() {
  const [opened, { toggle, close }] = useDisclosure();
  const { me, isAdmin } = useMe();
  const navigate = useNavigate();
  const logout = () => {
    setToken(null);
    navigate('/login', { replace: true });
  };
  return (
    <AppShell header={{ height: 56 }} navbar={{ width: 220, breakpoint: 'sm', collapsed: { mobile: !opened } }} padding="md">
      <AppShell.Header>
        <Group h="100%" px="md" justify="space-between">
          <Group>
            <Burger opened={opened} onClick={toggle} hiddenFrom="sm" size="sm" aria-label="Open the menu" />
            <Title order={1} size="h4">
              Herald
            </Title>
            {me && <Text c="dimmed">{me.organization.name}</Text>}
          </Group>
          <Group>
            {me && (
              <Text size="sm" aria-label="Credits">
                {formatNumber(me.organization.credits)} credits
              </Text>
            )}
            {me && <Text size="sm">{me.firstName}</Text>}
            <Button variant="default" size="xs" onClick={logout}>
              Log out
            </Button>
          </Group>
        </Group>
      </AppShell.Header>
      <AppShell.Navbar p="xs" aria-label="Main">
        <ScrollArea>
          {NAV.filter((item) => !item.adminOnly || isAdmin).map((item) => (
            <NavLink key={item.to} component={RouterLink} to={item.to} end={item.to === '/'} label={item.label} onClick={close} variant="filled" />
          ))}
        </ScrollArea>
      </AppShell.Navbar>
      <AppShell.Main>
        <Suspense fallback={<PageLoader />}>
          <TwoFactorGate>
            <Outlet />
          </TwoFactorGate>
        </Suspense>
      </AppShell.Main>
    </AppShell>
  );
}
