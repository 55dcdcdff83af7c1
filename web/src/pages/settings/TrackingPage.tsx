import { Paper, Stack, Switch, Text } from '@mantine/core';
import { useMutation, useQuery } from 'urql';
import { ErrorAlert } from '../../components/ErrorAlert';
import { PageHeader } from '../../components/PageHeader';
import { PageLoader } from '../../components/PageLoader';
import { graphql } from '../../gql';

const TrackingSetting = graphql(`
  query TrackingSetting {
    organization {
      _id
      tracking
    }
  }
`);

const TrackingUpdate = graphql(`
  mutation TrackingUpdate($input: OrganizationInput!) {
    updateOrganization(input: $input) {
      _id
      tracking
    }
  }
`);

/** Whether ad hoc sends' emails carry an open pixel and tracked links; the switch saves at once. */
export default function TrackingPage() {
  const [{ data, fetching, error }] = useQuery({ query: TrackingSetting });
  const [state, update] = useMutation(TrackingUpdate);
  const tracking = data?.organization.tracking;
  return (
    <>
      <PageHeader title="Tracking" />
      <ErrorAlert error={error ?? state.error} />
      {tracking == null && fetching && <PageLoader />}
      {tracking != null && (
        <Paper withBorder p="lg" radius="md" maw={720}>
          <Stack>
            <Switch
              size="md"
              label="Track opens and clicks of sent emails"
              description="Emails sent from the Send page or the API carry an open pixel and tracked links, so their logs show who opened and clicked. Campaign emails are always tracked."
              checked={tracking}
              disabled={state.fetching}
              onChange={(e) => void update({ input: { tracking: e.currentTarget.checked } })}
            />
            <Text size="sm" role="status">
              {tracking ? 'Tracking is on.' : 'Tracking is off: sent emails go out without a pixel, with their links as written. Campaign emails are still tracked.'}
            </Text>
          </Stack>
        </Paper>
      )}
    </>
  );
}
