import { Alert, Badge, Card, Group, Loader, Paper, Stack, Text, Title } from '@mantine/core';
import { useState } from 'react';
import { useQuery } from 'urql';
import { ContactSelect, type ContactOption } from '../../components/ContactPicker';
import { ErrorAlert } from '../../components/ErrorAlert';
import { graphql } from '../../gql';
import { formatDateTime } from '../../lib/format';
import { CHANNEL_LABELS, plural } from './campaign-fields';
import { EmailFrame } from './EmailFrame';

const CampaignPreviewDocument = graphql(`
  query CampaignPagePreview($id: ID!, $contactId: ID) {
    campaignPreview(id: $id, contactId: $contactId) {
      contactId
      messages {
        channel
        recipient
        subject
        text
        html
        segments
        encoding
        cost
        error
        sendsAt
      }
    }
  }
`);

/**
 * The campaign's messages as one recipient would get them: rendered by the server for a chosen
 * contact, or for the campaign's first recipient (asked again each time the card is shown, so an
 * edit is never previewed stale); an email drawn as a mail client would, in a sandboxed frame.
 */
export function CampaignPreviewCard({ campaignId }: { campaignId: string }) {
  const [contact, setContact] = useState<ContactOption | null>(null);
  const [{ data, fetching, error }] = useQuery({
    query: CampaignPreviewDocument,
    variables: { id: campaignId, contactId: contact?._id ?? null },
    requestPolicy: 'network-only',
  });
  const preview = data?.campaignPreview;
  return (
    <Card withBorder>
      <Stack>
        <Title order={3}>Preview</Title>
        <ContactSelect label="Preview for" placeholder="The campaign’s first recipient" description="Type a contact’s name, email or phone" value={contact} onChange={setContact} />
        <ErrorAlert error={error} title="The preview failed" />
        {!preview && fetching && <Loader size="sm" role="status" aria-label="Loading" />}
        {preview?.messages.map((m) => (
          <Stack key={m.channel} gap="xs">
            <Group gap="xs">
              <Title order={4}>{CHANNEL_LABELS[m.channel]}</Title>
              {m.recipient && <Text size="sm">to {m.recipient}</Text>}
            </Group>
            {m.recipient === null && <Text size="sm">This contact has no address for {CHANNEL_LABELS[m.channel]}: it would not be sent.</Text>}
            {/* Held for their sending hours or the local send time: when a launch now would reach them. */}
            {m.recipient && m.sendsAt && <Text size="sm">Reaches them at {formatDateTime(m.sendsAt)} if launched now.</Text>}
            {m.error && (
              <Alert color="red" title="It cannot be rendered" role="alert">
                {m.error}
              </Alert>
            )}
            {m.text != null &&
              (m.channel === 'email' ? (
                <Stack gap={4} role="group" aria-label={`${CHANNEL_LABELS[m.channel]} preview`}>
                  <Text fw={600}>{m.subject || '(no subject)'}</Text>
                  <EmailFrame body={m.text} html={m.html} title={`${CHANNEL_LABELS[m.channel]} preview`} />
                </Stack>
              ) : (
                <Paper withBorder p="sm" aria-label={`${CHANNEL_LABELS[m.channel]} preview`}>
                  <Text style={{ whiteSpace: 'pre-wrap', overflowWrap: 'anywhere' }}>{m.text}</Text>
                </Paper>
              ))}
            <Group gap="xs">
              {m.segments != null && (
                <Badge variant="outline" color="gray.8" tt="none">
                  {plural(m.segments, 'segment', 'segments')}
                </Badge>
              )}
              {m.encoding && (
                <Badge variant="outline" color="gray.8" tt="none">
                  {m.encoding}
                </Badge>
              )}
              <Badge variant="outline" color="gray.8" tt="none">
                {plural(m.cost, 'credit', 'credits')}
              </Badge>
            </Group>
          </Stack>
        ))}
      </Stack>
    </Card>
  );
}
