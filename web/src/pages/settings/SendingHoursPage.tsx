import { Button, Group, Paper, Stack, Text } from '@mantine/core';
import { useEffect, useState } from 'react';
import { useMutation, useQuery } from 'urql';
import { ErrorAlert } from '../../components/ErrorAlert';
import { PageHeader } from '../../components/PageHeader';
import { PageLoader } from '../../components/PageLoader';
import { SendingHoursFields, hoursDraftOf, hoursOf, type HoursDraft } from '../../components/SendingHoursFields';
import { TimeZoneSelect } from '../../components/TimeZoneSelect';
import { graphql } from '../../gql';
import { fieldErrors } from '../../lib/errors';

const SendingHoursSetting = graphql(`
  query SendingHoursSetting {
    organization {
      _id
      timezone
      sendingHours
    }
  }
`);

const SendingHoursUpdate = graphql(`
  mutation SendingHoursUpdate($input: OrganizationInput!) {
    updateOrganization(input: $input) {
      _id
      timezone
      sendingHours
    }
  }
`);

/** What the saved settings mean, said once saved. */
const savedWords = (zone: string, hours: string | null) =>
  `Saved: contacts without a zone of their own are in ${zone}; campaigns reach recipients ${hours ? `between ${hours.slice(0, 5)} and ${hours.slice(6)} their time` : 'at any time'}.`;

/**
 * The organization's time zone (the one of every contact without a zone of its own) and its sending
 * hours (when campaigns may reach a recipient, on the recipient's clock), saved together (admins).
 */
export default function SendingHoursPage() {
  const [{ data, fetching, error }] = useQuery({ query: SendingHoursSetting });
  const [state, update] = useMutation(SendingHoursUpdate);
  const saved = data?.organization.timezone;
  // Undefined until read; null when the organization has none (any time).
  const savedHours = data?.organization.sendingHours;
  const [zone, setZone] = useState<string | null>(null);
  const [hours, setHours] = useState<HoursDraft>(() => hoursDraftOf(null));
  const [done, setDone] = useState(false);
  useEffect(() => {
    if (saved) setZone(saved);
  }, [saved]);
  useEffect(() => {
    if (savedHours !== undefined) setHours(hoursDraftOf(savedHours));
  }, [savedHours]);
  const problems = fieldErrors(state.error);
  const hoursChanged = savedHours !== undefined && hoursOf(hours) !== savedHours;
  const save = async () => {
    setDone(false);
    if (!zone) return;
    // Only what changed: each change is audited on its own.
    const input = { ...(zone !== saved ? { timezone: zone } : {}), ...(hoursChanged ? { sendingHours: hoursOf(hours) } : {}) };
    const result = await update({ input });
    if (!result.error) setDone(true);
  };
  return (
    <>
      <PageHeader title="Sending hours" />
      <ErrorAlert error={error ?? (problems.timezone || problems.sendingHours ? undefined : state.error)} />
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
            <SendingHoursFields
              label="Limit campaign sending hours"
              description="The hours are read in each recipient's time zone, a window ending before it starts crosses midnight, and a campaign message due outside it waits for the next opening; automated campaigns and single sends are never held."
              value={hours}
              onChange={(h) => {
                setHours(h);
                setDone(false);
              }}
              error={problems.sendingHours}
            />
            <Group>
              <Button loading={state.fetching} onClick={() => void save()} disabled={!zone || (zone === saved && !hoursChanged)}>
                Save
              </Button>
              {done && (
                <Text size="sm" role="status">
                  {savedWords(saved, savedHours ?? null)}
                </Text>
              )}
            </Group>
          </Stack>
        </Paper>
      )}
    </>
  );
}
