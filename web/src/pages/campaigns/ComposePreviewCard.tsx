import { Alert, Badge, Card, Code, Group, Loader, Paper, Stack, Text, Title } from '@mantine/core';
import { useDebouncedValue } from '@mantine/hooks';
import { useMemo, useRef, useState } from 'react';
import { useQuery } from 'urql';
import { ContactSelect, type ContactOption } from '../../components/ContactPicker';
import { graphql } from '../../gql';
import type { Channel, MessagePreviewFieldsFragment, MessagePreviewInput } from '../../gql/graphql';
import { fieldErrors, messageOf } from '../../lib/errors';
import { CHANNEL_LABELS, WARNING_TITLE, plural } from './campaign-fields';
import { EmailFrame } from './EmailFrame';

export const MessagePreviewFields = graphql(`
  fragment MessagePreviewFields on MessagePreview {
    contactId
    recipient
    subject
    body
    html
    length
    segments
    encoding
    cost
    emptyVariables
    error
  }
`);

const ComposePreview = graphql(`
  query ComposePreview($input: MessagePreviewInput!) {
    previewMessage(input: $input) {
      ...MessagePreviewFields
    }
  }
`);

/** The contact a preview starts with: the first of the contacts list. */
const ComposePreviewFirstContact = graphql(`
  query ComposePreviewFirstContact {
    contacts(first: 1) {
      edges {
        node {
          _id
          name
          email
          phone
        }
      }
    }
  }
`);

/** A channel's text as the preview renders it: written in the form, or the chosen template's. */
export interface PreviewText {
  channel: Channel;
  subject: string;
  content: string;
}

/** Milliseconds of quiet typing before the preview is asked again. */
const TYPING_PAUSE = 400;

/**
 * The campaign's messages as one contact would get them, while they are written: rendered by the
 * server exactly as a send would (`previewMessage`), a short pause after each change, for the
 * contact chosen (the first contact until one is).
 */
export function ComposePreviewCard({ texts, campaignName }: { texts: PreviewText[]; campaignName: string }) {
  const [chosen, setChosen] = useState<ContactOption | null>(null);
  const [{ data: first }] = useQuery({ query: ComposePreviewFirstContact });
  const contact = chosen ?? first?.contacts.edges[0]?.node ?? null;
  return (
    <Card withBorder>
      <Stack>
        <Title order={3}>Preview</Title>
        <ContactSelect label="Preview for" placeholder="Type a contact’s name, email or phone" value={contact} onChange={setChosen} />
        {!first?.contacts.edges.length && !chosen && <Text size="sm">No contacts yet: the preview renders for nobody, as a send to an address no contact has would.</Text>}
        {texts.map((t) => (
          <ChannelPreview key={t.channel} text={t} contact={contact} campaignName={campaignName} />
        ))}
      </Stack>
    </Card>
  );
}

function ChannelPreview({ text, contact, campaignName }: { text: PreviewText; contact: ContactOption | null; campaignName: string }) {
  const label = CHANNEL_LABELS[text.channel];
  // Debounced as text: a new object each render would restart the pause for ever.
  const [asked] = useDebouncedValue(
    JSON.stringify({
      channel: text.channel,
      content: text.content,
      ...(text.channel === 'email' ? { subject: text.subject } : {}),
      ...(contact ? { contactId: contact._id } : {}),
      campaignName: campaignName.slice(0, 100),
    }),
    TYPING_PAUSE,
  );
  const input = useMemo(() => JSON.parse(asked) as MessagePreviewInput, [asked]);
  const empty = !input.content.trim();
  const [{ data, fetching, error }] = useQuery({ query: ComposePreview, variables: { input }, pause: empty });
  // The last answer stays shown while the next one is asked for: the preview does not flicker as one types.
  const last = useRef<MessagePreviewFieldsFragment | null>(null);
  if (data) last.current = data.previewMessage;
  const shown = empty ? null : (data?.previewMessage ?? last.current);
  const problems = Object.values(fieldErrors(error));

  return (
    <Stack gap="xs">
      <Group gap="xs">
        <Title order={4}>{label}</Title>
        {shown?.recipient && <Text size="sm">to {shown.recipient}</Text>}
        {fetching && <Loader size="xs" role="status" aria-label={`Updating the ${label} preview`} />}
      </Group>
      {empty && <Text size="sm" c="dimmed">Write the {label} message to see it here.</Text>}
      {error && (
        <Alert color="red" title="The preview cannot be rendered" role="alert">
          {problems.length ? problems.join('; ') : messageOf(error)}
        </Alert>
      )}
      {shown && contact && shown.recipient === null && <Text size="sm">{contact.name} has no address for {label}: a send would skip them.</Text>}
      {shown?.error && (
        <Alert color="red" title="It cannot be rendered for this contact" role="alert">
          {shown.error}
        </Alert>
      )}
      {shown && shown.emptyVariables.length > 0 && (
        <Alert color="yellow" title={contact ? `Empty for ${contact.name}` : 'Empty for this recipient'} role="status" styles={WARNING_TITLE}>
          <Group gap={6}>
            {shown.emptyVariables.map((v) => (
              <Code key={v}>{v}</Code>
            ))}
          </Group>
        </Alert>
      )}
      {shown?.body != null && (
        <>
          {text.channel === 'email' ? (
            <Stack gap={4} aria-label={`${label} preview`} role="group">
              <Text fw={600}>{shown.subject || '(no subject)'}</Text>
              <EmailFrame body={shown.body} html={shown.html} title={`${label} preview`} />
            </Stack>
          ) : (
            <Paper withBorder p="sm" aria-label={`${label} preview`} role="group">
              <Text style={{ whiteSpace: 'pre-wrap', overflowWrap: 'anywhere' }}>{shown.body}</Text>
            </Paper>
          )}
          <Group gap="xs">
            {shown.segments != null && (
              <Badge variant="outline" color="gray.8" tt="none">
                {plural(shown.segments, 'segment', 'segments')}
              </Badge>
            )}
            {shown.encoding && (
              <Badge variant="outline" color="gray.8" tt="none">
                {shown.encoding}
              </Badge>
            )}
            {text.channel !== 'email' && (
              <Badge variant="outline" color="gray.8" tt="none">
                {plural(shown.length, 'character', 'characters')}
              </Badge>
            )}
            <Badge variant="outline" color="gray.8" tt="none">
              {plural(shown.cost, 'credit', 'credits')} each
            </Badge>
          </Group>
        </>
      )}
    </Stack>
  );
}
