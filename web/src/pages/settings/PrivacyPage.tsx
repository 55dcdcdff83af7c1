import { Button, Group, NumberInput, Paper, Stack, Text } from '@mantine/core';
import { useEffect, useState } from 'react';
import { useMutation, useQuery } from 'urql';
import { ErrorAlert } from '../../components/ErrorAlert';
import { PageHeader } from '../../components/PageHeader';
import { PageLoader } from '../../components/PageLoader';
import { graphql } from '../../gql';
import { fieldErrors } from '../../lib/errors';

const RetentionSetting = graphql(`
  query RetentionSetting {
    organization {
      _id
      retentionDays
    }
  }
`);

const RetentionUpdate = graphql(`
  mutation RetentionUpdate($input: OrganizationInput!) {
    updateOrganization(input: $input) {
      _id
      retentionDays
    }
  }
`);

/** How long the organization keeps its message logs and what hangs off them (admins). */
export default function PrivacyPage() {
  const [{ data, fetching, error }] = useQuery({ query: RetentionSetting });
  const [state, update] = useMutation(RetentionUpdate);
  const saved = data?.organization.retentionDays;
  const [days, setDays] = useState<number | string>('');
  const [done, setDone] = useState(false);
  useEffect(() => {
    if (saved != null) setDays(saved);
  }, [saved]);
  const problems = fieldErrors(state.error);
  const save = async () => {
    setDone(false);
    const result = await update({ input: { retentionDays: Number(days) } });
    if (!result.error) setDone(true);
  };
  return (
    <>
      <PageHeader title="Privacy" />
      <ErrorAlert error={error ?? (problems.retentionDays ? undefined : state.error)} />
      {saved == null && fetching && <PageLoader />}
      {saved != null && (
        <Paper withBorder p="lg" radius="md" maw={720}>
          <Stack>
            <NumberInput
              label="Keep message logs for (days)"
              description="Message logs with their recipients, receipts, opens and clicks, the sandbox outbox, webhook events and bounce history older than this are deleted every day. Campaign analytics and the dashboard's figures stay. 30 to 3,650 days; 395 (13 months) unless changed."
              min={30}
              max={3650}
              allowDecimal={false}
              clampBehavior="none"
              value={days}
              onChange={(v) => {
                setDays(v);
                setDone(false);
              }}
              error={problems.retentionDays}
            />
            <Group>
              <Button loading={state.fetching} onClick={() => void save()} disabled={String(days) === String(saved)}>
                Save
              </Button>
              {done && (
                <Text size="sm" role="status">
                  Saved: logs are kept for {saved} days.
                </Text>
              )}
            </Group>
            <Text size="sm">
              A person who asks for their data, or to be forgotten, is answered from their contact&apos;s page: <b>Download data</b>, then <b>Erase person</b>.
            </Text>
          </Stack>
        </Paper>
      )}
    </>
  );
}
