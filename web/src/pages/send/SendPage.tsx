import { Alert, Button, Card, Code, Grid, Group, Loader, Paper, Radio, Select, Stack, Table, TagsInput, Text, TextInput, Textarea, Title } from '@mantine/core';
import { useDebouncedValue } from '@mantine/hooks';
import { useCallback, useState, type FormEvent } from 'react';
import { useClient, useMutation, useQuery, type CombinedError } from 'urql';
import { ContactPicker, type ContactOption } from '../../components/ContactPicker';
import { ErrorAlert } from '../../components/ErrorAlert';
import { PageHeader } from '../../components/PageHeader';
import { RecipientResults } from '../../components/RecipientResults';
import { graphql } from '../../gql';
import type { Channel, SendNotificationInput, SendPageEstimateQuery } from '../../gql/graphql';
import { fieldErrors, messageOf } from '../../lib/errors';
import { formatNumber } from '../../lib/format';
import { MeQuery, useMe } from '../../lib/me';

const SendTemplates = graphql(`
  query SendPageTemplates {
    templates(first: 1000) {
      edges {
        node {
          _id
          name
          channel
          subject
          content
        }
      }
    }
  }
`);

const SendNotificationDocument = graphql(`
  mutation SendPageSend($input: SendNotificationInput!) {
    sendNotification(input: $input) {
      recipient
      status
      error
    }
  }
`);

const SendEstimateDocument = graphql(`
  query SendPageEstimate($input: SendNotificationInput!) {
    notificationEstimate(input: $input) {
      recipients
      invalid
      unitCost
      cost
      balance
    }
  }
`);

const NOWRAP = { whiteSpace: 'nowrap' } as const;

/** How long typing pauses before the estimate is asked again: a request per pause, not per key. */
const ESTIMATE_DELAY_MS = 400;

const CHANNEL_LABELS: Record<Channel, string> = { sms: 'SMS', email: 'Email', whatsapp: 'WhatsApp' };

/** The address of a contact a channel sends to: the phone for SMS and WhatsApp, the email for email. */
const addressOf = (c: ContactOption, channel: Channel) => (channel === 'email' ? c.email : c.phone);

/**
 * An ad hoc message to contacts and addresses over one channel (`sendNotification`), and then how it
 * went for each recipient, with a link to its message log. Transactional: sent to every recipient
 * given, whatever consent a contact gave.
 */
export default function SendPage() {
  const { me } = useMe();
  const client = useClient();
  const [{ data: templateData }] = useQuery({ query: SendTemplates });
  const [channel, setChannel] = useState<Channel>('sms');
  const [contacts, setContacts] = useState<ContactOption[]>([]);
  const [addresses, setAddresses] = useState<string[]>([]);
  const [templateId, setTemplateId] = useState<string | null>(null);
  const [subject, setSubject] = useState('');
  const [message, setMessage] = useState('');
  const [sent, setSent] = useState<{ channel: Channel; since: string } | null>(null);
  const [state, send] = useMutation(SendNotificationDocument);
  const errors = fieldErrors(state.error);
  const isAdHoc = useCallback((log: { campaignId?: string | null }) => !log.campaignId, []);

  const templates = (templateData?.templates.edges ?? []).map((e) => e.node).filter((t) => t.channel === channel);
  const template = templates.find((t) => t._id === templateId);
  const unreachable = contacts.filter((c) => !addressOf(c, channel));
  const to = [...new Set([...contacts.map((c) => addressOf(c, channel)).filter((a): a is string => !!a), ...addresses])];

  const input: SendNotificationInput = templateId
    ? { type: channel, to, templateId }
    : { type: channel, to, message, ...(channel === 'email' ? { subject } : {}) };
  const complete = to.length > 0 && (!!templateId || (!!message.trim() && (channel !== 'email' || !!subject.trim())));
  const estimate = useSendEstimate(complete ? input : null);
  const counted = estimate.estimate?.recipients ?? to.length;

  const changeChannel = (value: string) => {
    setChannel(value as Channel);
    setTemplateId(null);
  };
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    // A minute of slack for the browser's clock against the server's, to find the logs afterwards.
    const since = new Date(Date.now() - 60_000).toISOString();
    const result = await send({ input });
    setSent(result.data ? { channel, since } : null);
    // The balance changed: read it again (the header shows it too).
    if (result.data) void client.query(MeQuery, {}, { requestPolicy: 'network-only' }).toPromise();
  };

  return (
    <>
      <PageHeader title="Send" />
      <Grid>
        <Grid.Col span={{ base: 12, md: 7 }}>
          <form onSubmit={submit}>
            <Stack>
              {(!Object.keys(errors).length || errors.type) && <ErrorAlert error={state.error} title="Nothing was sent" />}
              <Radio.Group label="Channel" required value={channel} onChange={changeChannel} error={errors.type}>
                <Group mt="xs">
                  {(Object.keys(CHANNEL_LABELS) as Channel[]).map((c) => (
                    <Radio key={c} value={c} label={CHANNEL_LABELS[c]} />
                  ))}
                </Group>
              </Radio.Group>
              <ContactPicker
                label="Contacts"
                description={`Each contact gets it at its ${channel === 'email' ? 'email address' : 'phone number'}.`}
                placeholder="Type a name, email or phone"
                value={contacts}
                onChange={setContacts}
              />
              {unreachable.length > 0 && (
                <Alert color="orange.9" title="Left out">
                  {unreachable.map((c) => c.name).join(', ')} {unreachable.length === 1 ? 'has' : 'have'} no {channel === 'email' ? 'email address' : 'phone number'}.
                </Alert>
              )}
              <TagsInput
                label="Other addresses"
                description={`${channel === 'email' ? 'Email addresses' : 'Phone numbers (international, or national in your organization’s country)'}; press Enter after each.`}
                value={addresses}
                onChange={setAddresses}
                error={errors.to}
              />
              <Select
                label="Template"
                description="Send a saved template instead of writing the message; its text is copied when it is sent."
                placeholder={templates.length ? 'None: write the message below' : `No saved ${CHANNEL_LABELS[channel]} templates`}
                data={templates.map((t) => ({ value: t._id, label: t.name }))}
                value={templateId}
                onChange={setTemplateId}
                clearable
                error={errors.templateId}
              />
              {template ? (
                <Paper withBorder p="sm">
                  {template.subject && <Text fw={600}>{template.subject}</Text>}
                  <Text size="sm" style={{ whiteSpace: 'pre-wrap' }}>
                    {template.content}
                  </Text>
                </Paper>
              ) : (
                <>
                  {channel === 'email' && <TextInput label="Subject" value={subject} onChange={(e) => setSubject(e.currentTarget.value)} error={errors.subject} />}
                  <Textarea
                    label="Message"
                    description={
                      <>
                        Liquid works here: <Code style={NOWRAP}>{'{{ contact.phone }}'}</Code> <Code style={NOWRAP}>{'{{ contact.email }}'}</Code>{' '}
                        <Code style={NOWRAP}>{'{{ organization.name }}'}</Code>. A recipient of a send has no other contact fields.
                      </>
                    }
                    autosize
                    minRows={channel === 'email' ? 6 : 3}
                    value={message}
                    onChange={(e) => setMessage(e.currentTarget.value)}
                    error={errors.message}
                  />
                </>
              )}
              <Group justify="space-between">
                <Text size="sm">
                  {formatNumber(counted)} {counted === 1 ? 'recipient' : 'recipients'}
                  {estimate.estimate && `, ${formatNumber(estimate.estimate.cost)} ${estimate.estimate.cost === 1 ? 'credit' : 'credits'}`}
                </Text>
                <Button type="submit" loading={state.fetching}>
                  Send message
                </Button>
              </Group>
            </Stack>
          </form>
        </Grid.Col>
        <Grid.Col span={{ base: 12, md: 5 }}>
          <CostCard complete={complete} state={estimate} credits={me?.organization.credits} />
        </Grid.Col>
      </Grid>
      {state.data && sent && (
        <Card withBorder mt="md">
          <Title order={3} mb="xs">
            Result
          </Title>
          <RecipientResults results={state.data.sendNotification} filter={{ channel: sent.channel, dateFrom: sent.since }} accept={isAdHoc} caption="Result per recipient" />
        </Card>
      )}
    </>
  );
}

type SendEstimate = SendPageEstimateQuery['notificationEstimate'];

interface EstimateState {
  /** The last estimate answered, kept while a newer one is asked, so that the card does not flicker as one types. */
  estimate: SendEstimate | null;
  /** Whether `estimate` is of the form as it stands. */
  current: boolean;
  error: CombinedError | undefined;
}

/**
 * The server's estimate of the send as the form stands, asked once typing pauses (a request per
 * pause, not per key); null `input` while recipients or the message are missing.
 */
function useSendEstimate(input: SendNotificationInput | null): EstimateState {
  // Compared as text: a new object of the same input is the same estimate.
  const key = input && JSON.stringify(input);
  const [settled] = useDebouncedValue(key, ESTIMATE_DELAY_MS);
  const asked = settled && settled === key ? input : null;
  const [{ data, fetching, error, operation }] = useQuery({ query: SendEstimateDocument, variables: { input: asked! }, pause: !asked });
  const [kept, setKept] = useState<{ key: string; estimate: SendEstimate } | null>(null);
  const answered = data && !fetching && operation ? { key: JSON.stringify(operation.variables.input), estimate: data.notificationEstimate } : null;
  if (answered && (answered.key !== kept?.key || answered.estimate !== kept.estimate)) setKept(answered);
  return { estimate: input && kept ? kept.estimate : null, current: !!key && kept?.key === key && !fetching, error: asked ? error : undefined };
}

/** What the send costs before it is sent, priced by the server as the send prices it. */
function CostCard({ complete, state: { estimate, current, error }, credits }: { complete: boolean; state: EstimateState; credits: number | undefined }) {
  const rows: [string, string][] = estimate
    ? [
        ['Recipients', formatNumber(estimate.recipients)],
        ['Cannot be sent to', formatNumber(estimate.invalid)],
        ['Credits each', formatNumber(estimate.unitCost)],
        ['This send costs', `${formatNumber(estimate.cost)} credits`],
      ]
    : [];
  return (
    <Card withBorder component="section" aria-labelledby="send-cost">
      <Title order={3} mb="xs" id="send-cost">
        Cost
      </Title>
      <Stack gap="xs">
        {!complete && <Text size="sm">Add recipients and a message to see what this send costs.</Text>}
        {complete && !estimate && !error && <Loader size="sm" role="status" aria-label="Estimating the cost" />}
        {complete && error && <Text size="sm">{`No estimate yet: ${messageOf(error)}`}</Text>}
        {estimate && (
          <Table variant="vertical" withTableBorder={false} aria-label="Estimate" opacity={current ? 1 : 0.6}>
            <Table.Tbody>
              {rows.map(([label, value]) => (
                <Table.Tr key={label}>
                  <Table.Th scope="row">{label}</Table.Th>
                  <Table.Td ta="right">{value}</Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        )}
        {estimate && current && estimate.cost > estimate.balance && (
          <Alert color="orange.9" title="Not enough credits">
            This send needs {formatNumber(estimate.cost)} credits; your organization has {formatNumber(estimate.balance)}. Nothing would be sent.
          </Alert>
        )}
        {credits !== undefined && <Text fw={600}>Your balance: {formatNumber(estimate?.balance ?? credits)} credits</Text>}
        <Text size="sm" c="dimmed">
          Each recipient costs its own rendered message: an SMS by its segments (160 characters, or 70 with characters outside GSM-7; 153 and 67 each
          when split), an email or a WhatsApp message at its channel’s price. The whole cost is reserved before anything is sent; failed recipients are
          never charged.
        </Text>
      </Stack>
    </Card>
  );
}
