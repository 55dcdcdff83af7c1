import { Anchor, Paper, Stack, Switch, Text } from '@mantine/core';
import { Link } from 'react-router';
import { useMutation, useQuery } from 'urql';
import { ErrorAlert } from '../../components/ErrorAlert';
import { graphql } from '../../gql';

const RequireTwoFactorSetting = graphql(`
  query RequireTwoFactorSetting {
    organization {
      _id
      requireTwoFactor
    }
    twoFactor {
      enabled
    }
  }
`);

const RequireTwoFactorUpdate = graphql(`
  mutation RequireTwoFactorUpdate($input: OrganizationInput!) {
    updateOrganization(input: $input) {
      _id
      requireTwoFactor
    }
  }
`);

/**
 * The organization's requirement of two-factor authentication (admins); the switch saves at once.
 * Turning it on needs the admin's own two-factor authentication first, as the server does.
 */
export function RequireTwoFactorCard() {
  const [{ data, error }] = useQuery({ query: RequireTwoFactorSetting });
  const [state, update] = useMutation(RequireTwoFactorUpdate);
  if (!data) return <ErrorAlert error={error} />;
  const required = data.organization.requireTwoFactor;
  const canRequire = required || data.twoFactor.enabled;
  return (
    <Paper withBorder p="md" radius="md" mb="md" maw={720}>
      <Stack gap="xs">
        <ErrorAlert error={state.error} />
        <Switch
          label="Require two-factor authentication"
          description="Every member must log in with a code from an authenticator app. Members who have not set it up can only do so until they have; API keys are not affected."
          checked={required}
          disabled={state.fetching || !canRequire}
          onChange={(e) => void update({ input: { requireTwoFactor: e.currentTarget.checked } })}
        />
        <Text size="sm" role="status">
          {required ? 'Every member must use two-factor authentication.' : 'Two-factor authentication is up to each member.'}
        </Text>
        {!canRequire && (
          <Text size="sm" c="dimmed">
            Set up two-factor authentication for your own account on your{' '}
            <Anchor component={Link} to="/profile" underline="always">
              profile
            </Anchor>{' '}
            first.
          </Text>
        )}
      </Stack>
    </Paper>
  );
}
