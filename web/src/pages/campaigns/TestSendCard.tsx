import { Alert, Button, Card, Code, Group, List, Stack, TagsInput, Text, Title } from '@mantine/core';
import { useCallback, useState, type FormEvent } from 'react';
import { useClient, useMutation, useQuery } from 'urql';
import { ErrorAlert } from '../../components/ErrorAlert';
import { RecipientResults } from '../../components/RecipientResults';
import { graphql } from '../../gql';
import type { Channel } from '../../gql/graphql';
import { fieldErrors } from '../../lib/errors';
import { WARNING_TITLE } from './campaign-fields';

const TestCampaignDocument = graphql(`
  mutation CampaignPageTest($id: ID!, $to: [String!]!) {
    testCampaign(id: $id, to: $to) {
      recipient
      status
      error
    }
  }
`);

const TestSendTexts = graphql(`
  query TestSendTexts($id: ID!) {
    campaign(id: $id) {
      _id
      name
      channels
      messages {
        email {
          subject
          content
        }
        sms {
          content
        }
        whatsapp {
          content
        }
      }
    }
  }
`);

/** Each test address rendered as the send will render it: as the contact that has it, else as nobody but the address. */
const TestSendCheck = graphql(`
  query TestSendCheck($input: MessagePreviewInput!) {
    previewMessage(input: $input) {
      contactId
      subject
      body
      emptyVariables
    }
  }
`);

/** What a test address would get, when it reads a variable it has no value for. */
interface EmptyWarning {
  address: string;
  contact: boolean;
  variables: string[];
  /** The start of what it would read. */
  sample: string;
}

/** A rendered body as read: an HTML email's text without its markup. */
const readable = (body: string) => (new DOMParser().parseFromString(body, 'text/html').body.textContent ?? '').replace(/\s+/g, ' ').trim();
const shorten = (text: string) => (text.length > 140 ? `${text.slice(0, 139)}…` : text);

/**
 * Sends the rendered messages now to a few addresses (logged as tests, charged, never in the
 * analytics). Each address is rendered first as the send will render it: one that is a contact's
 * gets that contact's fields; when an address would leave variables empty (not a contact, or a
 * contact without the value), the card says which, shows what it would read, and asks first.
 */
export function TestSendCard({ campaignId }: { campaignId: string }) {
  const [to, setTo] = useState<string[]>([]);
  const [since, setSince] = useState<string | null>(null);
  const [warnings, setWarnings] = useState<EmptyWarning[] | null>(null);
  const [checking, setChecking] = useState(false);
  const [state, test] = useMutation(TestCampaignDocument);
  const [{ data }] = useQuery({ query: TestSendTexts, variables: { id: campaignId } });
  const client = useClient();
  const errors = fieldErrors(state.error);
  const isTest = useCallback((log: { test: boolean }) => log.test, []);

  const emptyFor = async (): Promise<EmptyWarning[]> => {
    const campaign = data?.campaign;
    if (!campaign) return [];
    const found: EmptyWarning[] = [];
    for (const address of new Set(to)) {
      const channels = campaign.channels.filter((c: Channel) => campaign.messages[c] && (c === 'email') === address.includes('@'));
      const warning: EmptyWarning = { address, contact: false, variables: [], sample: '' };
      for (const channel of channels) {
        const m = campaign.messages[channel]!;
        const input = { channel, content: m.content, to: address, campaignName: campaign.name, ...('subject' in m && m.subject != null ? { subject: m.subject } : {}) };
        const { data: checked } = await client.query(TestSendCheck, { input }, { requestPolicy: 'network-only' }).toPromise();
        // An address the server refuses is named by the send itself, next to the field.
        const preview = checked?.previewMessage;
        if (!preview) continue;
        warning.contact = preview.contactId != null;
        warning.variables = [...new Set([...warning.variables, ...preview.emptyVariables])];
        if (!warning.sample && preview.emptyVariables.length && preview.body != null) warning.sample = shorten(readable(preview.body));
      }
      if (warning.variables.length) found.push(warning);
    }
    return found;
  };

  const send = async () => {
    setWarnings(null);
    // A minute of slack for the browser's clock against the server's.
    setSince(new Date(Date.now() - 60_000).toISOString());
    await test({ id: campaignId, to });
  };

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setChecking(true);
    try {
      const found = await emptyFor();
      if (found.length) return setWarnings(found);
    } finally {
      setChecking(false);
    }
    await send();
  };

  return (
    <Card withBorder>
      <form onSubmit={submit}>
        <Stack>
          <Title order={3}>Test send</Title>
          <Text size="sm">
            Sends the messages now, rendered as a launch would, to up to 10 addresses: an email address gets the email, a phone number the SMS and
            WhatsApp messages. An address of a contact renders with that contact’s fields. Charged, and never counted in the analytics.
          </Text>
          {!errors.to && <ErrorAlert error={state.error} title="The test send failed" />}
          <TagsInput
            label="Test recipients"
            description="Emails or phone numbers; press Enter after each."
            value={to}
            onChange={(v) => {
              setTo(v);
              setWarnings(null);
            }}
            error={errors.to}
          />
          {warnings ? (
            <Alert color="yellow" title="Some variables will be empty" role="alert" styles={WARNING_TITLE}>
              <Stack gap="xs">
                <List spacing="xs">
                  {warnings.map((w) => (
                    <List.Item key={w.address}>
                      <Text size="sm">
                        {w.address} {w.contact ? 'is a contact without' : 'is not a contact: it has no'}{' '}
                        {w.variables.map((v, i) => (
                          <span key={v}>
                            {i > 0 && ', '}
                            <Code>{v}</Code>
                          </span>
                        ))}
                        .
                      </Text>
                      {w.sample && <Text size="sm">It would read: “{w.sample}”</Text>}
                    </List.Item>
                  ))}
                </List>
                <Group>
                  <Button onClick={send} loading={state.fetching}>
                    Send anyway
                  </Button>
                  <Button variant="default" onClick={() => setWarnings(null)}>
                    Change recipients
                  </Button>
                </Group>
              </Stack>
            </Alert>
          ) : (
            <Group>
              <Button type="submit" variant="default" loading={checking || state.fetching}>
                Send test
              </Button>
            </Group>
          )}
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
