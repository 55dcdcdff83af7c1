import { Alert } from '@mantine/core';
import { Navigate, Outlet, useLocation } from 'react-router';
import { useMe } from '../lib/me';
import { PageLoader } from './PageLoader';
import { useToken } from '../lib/session';

/** Pages for signed-in users: without a session (or once a 401 forgot it) the login page. */
export function RequireSession() {
  const token = useToken();
  const location = useLocation();
  if (!token) return <Navigate to="/login" replace state={{ from: location.pathname + location.search }} />;
  return <Outlet />;
}

/**
 * Pages for admins. A user-role caller who opens one through the URL is told why it sees nothing;
 * the server refuses the same actions anyway (403), this only spares the user a page of errors.
 */
export function RequireAdmin() {
  const { me, isAdmin, fetching } = useMe();
  if (!me && fetching) return <PageLoader />;
  if (!isAdmin) {
    return (
      <Alert color="indigo" title="Admins only" role="alert">
        This page is for the admins of your organization. Ask an admin if you need a change here.
      </Alert>
    );
  }
  return <Outlet />;
}
