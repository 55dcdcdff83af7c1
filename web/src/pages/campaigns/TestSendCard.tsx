import { Button, Card, Group, Stack, TagsInput, Text, Title } from '@mantine/core';
import { useCallback, useState, type FormEvent } from 'react';
import { useMutation } from 'urql';
import { ErrorAlert } from '../../components/ErrorAlert';
import { RecipientResults } from '../../components/RecipientResults';
import { graphql } from '../../gql';
import { fieldErrors } from '../../lib/errors';

const TestCampaignDocument = graphql(`
  mutation CampaignPageTest($id: ID!, $to: [String!]!) {
    testCampaign(id: $id, to: $to) {
      recipient
      status
      error
    }
  }
`);

/** Sends the rendered messages now to a few addresses (logged as tests, charged, never in the analytics). */
export function TestSendCard({ campaignId }: { campaignId: string }) {
  const [to, setTo] = useState<string[]>([]);
  const [since, setSince] = useState<string | null>(null);
  const [state, test] = useMutation(TestCampaignDocument);
  const errors = fieldErrors(state.error);
  const isTest = useCallback((log: { test: boolean }) => log.test, []);

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    // A minute of slack for the browser's clock against the server's.
    setSince(new Date(Date.now() - 60_000).toISOString());
    await test({ id: campaignId, to });
  };
  return (
    <Card withBorder>
      <form onSubmit={submit}>
        <Stack>
          <Title order={3}>Test send</Title>
          <Text size="sm">
            Sends the messages now, rendered as a launch would, to up to 10 addresses: an email address gets the email, a phone number the SMS and
            WhatsApp messages. Charged, and never counted in the analytics.
          </Text>
          {!errors.to && <ErrorAlert error={state.error} title="The test send failed" />}
          <TagsInput label="Test recipients" description="Emails or phone numbers; press Enter after each." value={to} onChange={setTo} error={errors.to} />
          <Group>
            <Button type="submit" variant="default" loading={state.fetching}>
              Send test
            </Button>
          </Group>
          {state.data && since && (
            <RecipientResults
              results={state.data.testCampaign}
              filter={{ campaignId, dateFrom: since }}
              accept={isTest}
              caption="Test send results"
            />
          )}
        </Stack>
      </form>
    </Card>
  );
}
