import { Alert, Button, Group, Modal, NumberInput, Paper, PasswordInput, Stack, Text, TextInput, Title } from '@mantine/core';
import { useEffect, useState } from 'react';
import { useMutation, useQuery } from 'urql';
import { ErrorAlert } from '../../components/ErrorAlert';
import { PageHeader } from '../../components/PageHeader';
import { PageLoader } from '../../components/PageLoader';
import { graphql } from '../../gql';
import { fieldErrors } from '../../lib/errors';
import { formatDateTime } from '../../lib/format';

const RetentionSetting = graphql(`
  query RetentionSetting {
    organization {
      _id
      name
      retentionDays
      closure {
        _id
        status
        requestedAt
        deleteAfter
      }
    }
  }
`);

const CloseOrganization = graphql(`
  mutation CloseOrganization($password: String!, $code: String) {
    closeOrganization(password: $password, code: $code) {
      _id
      status
      deleteAfter
    }
  }
`);

const CancelClosure = graphql(`
  mutation CancelOrganizationClosure {
    cancelOrganizationClosure {
      _id
      status
      cancelledAt
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
  const [{ data, fetching, error }, refetch] = useQuery({ query: RetentionSetting });
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
      {data && <ClosingCard name={data.organization.name} closure={data.organization.closure ?? null} onChange={() => refetch({ requestPolicy: 'network-only' })} />}
    </>
  );
}

interface Closure {
  status: string;
  requestedAt: string;
  deleteAfter: string;
}

/** Closing the organization: the request (password again, and the name typed), and while it waits, its cancellation. */
function ClosingCard({ name, closure, onChange }: { name: string; closure: Closure | null; onChange: () => void }) {
  const [open, setOpen] = useState(false);
  const [cancelState, cancel] = useMutation(CancelClosure);
  return (
    <Paper withBorder p="lg" radius="md" maw={720} mt="lg" component="section" aria-labelledby="closing-title">
      <Stack>
        <Title order={3} size="h4" id="closing-title">
          Close the organization
        </Title>
        {closure ? (
          <>
            <Alert color="red" title={closure.status === 'deleting' ? 'Being deleted' : 'Closing'}>
              {closure.status === 'deleting'
                ? 'Its data is being deleted now.'
                : `Closed on ${formatDateTime(closure.requestedAt)}. Every member, key, contact, group, campaign, log and setting will be deleted on ${formatDateTime(closure.deleteAfter)}.`}
            </Alert>
            <ErrorAlert error={cancelState.error} />
            {closure.status === 'scheduled' && (
              <Group>
                <Button
                  variant="default"
                  loading={cancelState.fetching}
                  onClick={async () => {
                    const result = await cancel({});
                    if (!result.error) onChange();
                  }}
                >
                  Cancel closing
                </Button>
              </Group>
            )}
          </>
        ) : (
          <>
            <Text size="sm">
              Closing deletes everything the organization holds: its members and API keys, contacts, groups, campaigns, message logs, webhooks, providers and settings. It
              happens after a grace period (7 days unless the platform sets another); until then nothing changes for the organization and any admin can cancel. Download what you
              want to keep first.
            </Text>
            <Group>
              <Button color="red" variant="outline" onClick={() => setOpen(true)}>
                Close organization…
              </Button>
            </Group>
          </>
        )}
      </Stack>
      {open && (
        <CloseDialog
          name={name}
          onClose={() => setOpen(false)}
          onClosed={() => {
            setOpen(false);
            onChange();
          }}
        />
      )}
    </Paper>
  );
}

function CloseDialog({ name, onClose, onClosed }: { name: string; onClose: () => void; onClosed: () => void }) {
  const [typed, setTyped] = useState('');
  const [password, setPassword] = useState('');
  const [code, setCode] = useState('');
  const [state, close] = useMutation(CloseOrganization);
  const problems = fieldErrors(state.error);
  const submit = async () => {
    const result = await close({ password, code: code.trim() || null });
    if (!result.error) onClosed();
  };
  return (
    <Modal opened onClose={onClose} title="Close the organization">
      <Stack>
        <Text size="sm">
          Everything {name} holds will be deleted after the grace period. Type its name and your password to confirm.
        </Text>
        <ErrorAlert error={problems.password || problems.code ? undefined : state.error} />
        <TextInput label={`Type "${name}"`} value={typed} onChange={(e) => setTyped(e.currentTarget.value)} autoComplete="off" />
        <PasswordInput label="Your password" value={password} onChange={(e) => setPassword(e.currentTarget.value)} error={problems.password} autoComplete="current-password" />
        <TextInput
          label="Two-factor code"
          description="Only if your account uses two-factor authentication: a code from your app, or a recovery code."
          value={code}
          onChange={(e) => setCode(e.currentTarget.value)}
          error={problems.code}
          autoComplete="one-time-code"
        />
        <Group justify="flex-end">
          <Button variant="default" onClick={onClose}>
            Keep the organization
          </Button>
          <Button color="red" loading={state.fetching} disabled={typed !== name || !password} onClick={() => void submit()}>
            Close organization
          </Button>
        </Group>
      </Stack>
    </Modal>
  );
}
