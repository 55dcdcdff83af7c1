import { useQuery } from 'urql';
import { graphql } from '../gql';

export const MeQuery = graphql(`
  query Me {
    me {
      _id
      firstName
      lastName
      email
      role
      organization {
        _id
        name
        credits
      }
    }
  }
`);

/** The signed-in user, and whether it is an admin (what the console shows is decided by it). */
export function useMe() {
  const [{ data, fetching, error }] = useQuery({ query: MeQuery });
  const me = data?.me ?? null;
  return { me, isAdmin: me?.role === 'admin', fetching, error };
}
