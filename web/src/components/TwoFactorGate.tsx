import { useRef, type ReactNode } from 'react';
import { Navigate, useLocation } from 'react-router';
import { useQuery } from 'urql';
import { graphql } from '../gql';
import { PageLoader } from './PageLoader';

const TwoFactorGateQuery = graphql(`
  query TwoFactorGate {
    twoFactor {
      enabled
      requiredByOrganization
    }
  }
`);

const PROFILE = '/profile';

/**
 * Where the organization requires two-factor authentication and the caller has not set it up, the
 * server refuses everything but enrolling (403): the console shows the profile page, where it is
 * set up, instead of pages that would only fail. The first page waits for the answer, so that none
 * of its queries go out before it is known; later refetches (every mutation refetches root fields)
 * never unmount the page shown.
 */
export function TwoFactorGate({ children }: { children: ReactNode }) {
  const [{ data, error }] = useQuery({ query: TwoFactorGateQuery });
  const location = useLocation();
  const known = useRef(false);
  if (data || error) known.current = true;
  if (!known.current) return <PageLoader />;
  const mustEnrol = data?.twoFactor.requiredByOrganization && !data.twoFactor.enabled;
  if (mustEnrol && location.pathname !== PROFILE) return <Navigate to={PROFILE} replace />;
  return children;
}
