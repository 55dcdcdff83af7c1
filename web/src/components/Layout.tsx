import { AppShell, Box, Burger, Button, Group, NavLink, ScrollArea, Text, Title } from '@mantine/core';
import { useDisclosure } from '@mantine/hooks';
import { Suspense } from 'react';
import { NavLink as RouterLink, Outlet, useNavigate } from 'react-router';
import { formatNumber } from '../lib/format';
import { useMe } from '../lib/me';
import { setToken } from '../lib/session';
import { PageLoader } from './PageLoader';
import { ClosingBanner } from './ClosingBanner';
import { SandboxBanner } from './SandboxBanner';
import { TwoFactorGate } from './TwoFactorGate';

interface NavItem {
  to: string;
  label: string;
  adminOnly?: boolean;
}

interface NavSection {
  /** Read out as the name of the section's group of links; the dashboard's section has none. */
  heading?: string;
  items: NavItem[];
}

/** The console's areas, in the order of the sidebar, by what a marketer came to do. */
const NAV: NavSection[] = [
  { items: [{ to: '/', label: 'Dashboard' }] },
  {
    heading: 'Messaging',
    items: [
      { to: '/send', label: 'Send' },
      { to: '/campaigns', label: 'Campaigns' },
      { to: '/templates', label: 'Templates' },
      { to: '/outbox', label: 'Sandbox outbox' },
    ],
  },
  {
    heading: 'Audience',
    items: [
      { to: '/contacts', label: 'Contacts' },
      { to: '/imports', label: 'Import contacts', adminOnly: true },
      { to: '/groups', label: 'Groups' },
      { to: '/settings/suppressions', label: 'Suppressions', adminOnly: true },
    ],
  },
  {
    heading: 'Insights',
    items: [
      { to: '/message-logs', label: 'Message logs' },
      { to: '/settings/audit-log', label: 'Audit log', adminOnly: true },
    ],
  },
  {
    heading: 'Settings',
    items: [
      { to: '/settings/team', label: 'Team', adminOnly: true },
      { to: '/settings/api-keys', label: 'API keys', adminOnly: true },
      { to: '/settings/channels', label: 'Channels', adminOnly: true },
      { to: '/settings/providers', label: 'Providers', adminOnly: true },
      { to: '/settings/dkim-keys', label: 'DKIM keys', adminOnly: true },
      { to: '/settings/webhooks', label: 'Webhooks', adminOnly: true },
      { to: '/settings/tracking', label: 'Tracking', adminOnly: true },
      { to: '/settings/sending-hours', label: 'Sending hours', adminOnly: true },
      { to: '/settings/privacy', label: 'Privacy', adminOnly: true },
      { to: '/profile', label: 'Profile' },
    ],
  },
];

/**
 * The sidebar's links, a labelled group per section (a screen reader names the group as it enters
 * it) rather than headings, so that each page keeps its title as its one `h2`.
 */
function Sidebar({ isAdmin, onNavigate }: { isAdmin: boolean; onNavigate: () => void }) {
  return NAV.map((section) => {
    const items = section.items.filter((item) => !item.adminOnly || isAdmin);
    if (!items.length) return null;
    const links = items.map((item) => (
      <NavLink key={item.to} component={RouterLink} to={item.to} end={item.to === '/'} label={item.label} onClick={onNavigate} variant="filled" py={6} />
    ));
    if (!section.heading) return <Box key="home">{links}</Box>;
    const id = `nav-${section.heading.toLowerCase()}`;
    return (
      <Box key={section.heading} role="group" aria-labelledby={id} mt="sm">
        <Text id={id} size="xs" fw={700} tt="uppercase" c="dimmed" px="sm" mb={4}>
          {section.heading}
        </Text>
        {links}
      </Box>
    );
  });
}

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
          <Sidebar isAdmin={isAdmin} onNavigate={close} />
        </ScrollArea>
      </AppShell.Navbar>
      <AppShell.Main>
        <ClosingBanner />
        <SandboxBanner />
        <Suspense fallback={<PageLoader />}>
          <TwoFactorGate>
            <Outlet />
          </TwoFactorGate>
        </Suspense>
      </AppShell.Main>
    </AppShell>
  );
}
