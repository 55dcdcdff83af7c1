import { Button, Group, Paper, Stack, Text } from '@mantine/core';
import { useEffect, useState } from 'react';
import { useMutation, useQuery } from 'urql';
import { ErrorAlert } from '../../components/ErrorAlert';
import { PageHeader } from '../../components/PageHeader';
import { PageLoader } from '../../components/PageLoader';
import { TimeZoneSelect } from '../../components/TimeZoneSelect';
import { graphql } from '../../gql';
import { fieldErrors } from '../../lib/errors';

const SendingHoursSetting = graphql(`
  query SendingHoursSetting {
    organization {
      _id
      timezone
    }
  }
`);

const SendingHoursUpdate = graphql(`
  mutation SendingHoursUpdate($input: OrganizationInput!) {
    updateOrganization(input: $input) {
      _id
      timezone
    }
  }
`);

/** The organization's time zone: the one of every contact without a zone of its own (admins). */
export default function SendingHoursPage() {
  const [{ data, fetching, error }] = useQuery({ query: SendingHoursSetting });
  const [state, update] = useMutation(SendingHoursUpdate);
  const saved = data?.organization.timezone;
  const [zone, setZone] = useState<string | null>(null);
  const [done, setDone] = useState(false);
  useEffect(() => {
    if (saved) setZone(saved);
  }, [saved]);
  const problems = fieldErrors(state.error);
  const save = async () => {
    setDone(false);
    if (!zone) return;
    const result = await update({ input: { timezone: zone } });
    if (!result.error) setDone(true);
  };
  return (
    <>
      <PageHeader title="Sending hours" />
      <ErrorAlert error={error ?? (problems.timezone ? undefined : state.error)} />
      {!saved && fetching && <PageLoader />}
      {saved && (
        <Paper withBorder p="lg" radius="md" maw={720}>
          <Stack>
            <TimeZoneSelect
              label="Organization time zone"
              description="The time zone of every contact without one of its own: a contact's own zone is set on it or in an import, or taken from its phone number's country when the country has one zone."
              value={zone}
              onChange={(z) => {
                setZone(z);
                setDone(false);
              }}
              error={problems.timezone}
            />
            <Group>
              <Button loading={state.fetching} onClick={() => void save()} disabled={!zone || zone === saved}>
                Save
              </Button>
              {done && (
                <Text size="sm" role="status">
                  Saved: contacts without a zone of their own are in {saved}.
                </Text>
              )}
            </Group>
          </Stack>
        </Paper>
      )}
    </>
  );
}
