/**
 * The console's pages, one folder per area under `pages/`, each loaded when first visited. Pages
 * behind `RequireSession` need a signed-in user; `RequireAdmin` pages are for admins only.
 */
import { lazy, type ComponentType } from 'react';
import { createBrowserRouter, matchRoutes, type RouteObject } from 'react-router';
import { Layout } from './components/Layout';
import { RequireAdmin, RequireSession } from './components/guards';

/**
 * A route whose page module is loaded on first visit (its default export is the page). The page is
 * a `React.lazy` component, not the router's `lazy` route: the router would render nothing, not even
 * the layout (and its queries), until the page's code arrived; this way the layout renders at once
 * and the page suspends inside it (`Layout`'s Suspense boundary, or `App`'s for the signed-out pages).
 */
const page = (load: () => Promise<{ default: ComponentType }>): Pick<RouteObject, 'Component' | 'handle'> => ({ Component: lazy(load), handle: { load } });

export const routes: RouteObject[] = [
  { path: '/login', ...page(() => import('./pages/auth/LoginPage')) },
  { path: '/signup', ...page(() => import('./pages/auth/SignupPage')) },
  { path: '/invite/:token', ...page(() => import('./pages/auth/AcceptInvitationPage')) },
  {
    element: <RequireSession />,
    children: [
      {
        element: <Layout />,
        children: [
          { index: true, ...page(() => import('./pages/dashboard/DashboardPage')) },
          { path: 'contacts', ...page(() => import('./pages/contacts/ContactsPage')) },
          { path: 'contacts/:id', ...page(() => import('./pages/contacts/ContactPage')) },
          {
            path: 'imports',
            element: <RequireAdmin />,
            children: [
              { index: true, ...page(() => import('./pages/imports/ImportPage')) },
              { path: ':id', ...page(() => import('./pages/imports/ImportProgressPage')) },
            ],
          },
          { path: 'groups', ...page(() => import('./pages/groups/GroupsPage')) },
          { path: 'templates', ...page(() => import('./pages/templates/TemplatesPage')) },
          { path: 'send', ...page(() => import('./pages/send/SendPage')) },
          { path: 'campaigns', ...page(() => import('./pages/campaigns/CampaignsPage')) },
          { path: 'campaigns/new', ...page(() => import('./pages/campaigns/CampaignFormPage')) },
          { path: 'campaigns/:id', ...page(() => import('./pages/campaigns/CampaignPage')) },
          { path: 'campaigns/:id/edit', ...page(() => import('./pages/campaigns/CampaignFormPage')) },
          { path: 'message-logs', ...page(() => import('./pages/logs/LogsPage')) },
          { path: 'message-logs/:id', ...page(() => import('./pages/logs/LogPage')) },
          { path: 'outbox', ...page(() => import('./pages/outbox/OutboxPage')) },
          { path: 'profile', ...page(() => import('./pages/profile/ProfilePage')) },
          {
            path: 'settings',
            element: <RequireAdmin />,
            children: [
              { path: 'team', ...page(() => import('./pages/settings/TeamPage')) },
              { path: 'api-keys', ...page(() => import('./pages/settings/ApiKeysPage')) },
              { path: 'channels', ...page(() => import('./pages/settings/ChannelsPage')) },
              { path: 'providers', ...page(() => import('./pages/settings/ProvidersPage')) },
              { path: 'suppressions', ...page(() => import('./pages/settings/SuppressionsPage')) },
              { path: 'dkim-keys', ...page(() => import('./pages/settings/DkimKeysPage')) },
              { path: 'webhooks', ...page(() => import('./pages/settings/WebhooksPage')) },
              { path: 'tracking', ...page(() => import('./pages/settings/TrackingPage')) },
              { path: 'sending-hours', ...page(() => import('./pages/settings/SendingHoursPage')) },
              { path: 'privacy', ...page(() => import('./pages/settings/PrivacyPage')) },
              { path: 'audit-log', ...page(() => import('./pages/settings/AuditLogPage')) },
            ],
          },
          { path: '*', ...page(() => import('./pages/NotFoundPage')) },
        ],
      },
    ],
  },
];

/**
 * The code of the page the console opens on is fetched at once, beside the layout's first render
 * (a lazy page would only ask for it when rendered).
 */
for (const match of matchRoutes(routes, window.location) ?? []) void (match.route.handle as { load?: () => Promise<unknown> } | undefined)?.load?.();

export const router = createBrowserRouter(routes);
