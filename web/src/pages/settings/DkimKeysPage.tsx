import { Alert, Badge, Button, Code, Group, List, Paper, Stack, Text, Title } from '@mantine/core';
import { useState } from 'react';
import { useMutation, useQuery } from 'urql';
import { EmptyState } from '../../components/EmptyState';
import { ErrorAlert } from '../../components/ErrorAlert';
import { PageHeader } from '../../components/PageHeader';
import { PageLoader } from '../../components/PageLoader';
import { graphql } from '../../gql';
import type { DkimCheckResultFragment, DkimKeyFieldsFragment } from '../../gql/graphql';
import { formatDateTime } from '../../lib/format';
import { CopyValue } from './CopyValue';
import { ALGORITHM_LABELS, NewDkimKeyForm } from './NewDkimKeyForm';

graphql(`
  fragment DkimKeyFields on DkimKey {
    _id
    domain
    selector
    algorithm
    dnsName
    dnsType
    record
    published
    checkedAt
    createdAt
  }
`);

graphql(`
  fragment DkimCheckResult on DkimCheck {
    published
    matches
    found
    problem
  }
`);

const DkimKeysList = graphql(`
  query DkimKeysList {
    dkimKeys {
      ...DkimKeyFields
    }
  }
`);

const CheckDkimKey = graphql(`
  mutation CheckDkimKey($id: ID!) {
    checkDkimKey(id: $id) {
      ...DkimCheckResult
      key {
        ...DkimKeyFields
      }
    }
  }
`);

const DeleteDkimKey = graphql(`
  mutation DeleteDkimKey($id: ID!) {
    deleteDkimKey(id: $id) {
      message
    }
  }
`);

/**
 * The organization's DKIM keys, one per sending domain and selector: the record each needs in DNS,
 * a check of what DNS has there, and keys made and deleted. Herald signs every email from a domain
 * with each of its keys.
 */
export default function DkimKeysPage() {
  const [{ data, fetching, error }] = useQuery({ query: DkimKeysList });
  const [creating, setCreating] = useState(false);
  const keys = data?.dkimKeys;

  return (
    <>
      <PageHeader title="DKIM keys">
        <Button onClick={() => setCreating(true)}>New key</Button>
      </PageHeader>
      <Text mb="md" maw={720}>
        Mailbox providers trust email signed by the domain it comes from. Make a key for each domain you send from, publish its record in the
        domain’s DNS, then check it. Every email from the domain, or from a domain below it, is signed with each of the domain’s keys. An Ed25519
        key belongs beside an RSA key: providers that do not check Ed25519 signatures still check the RSA one.
      </Text>
      <ErrorAlert error={error} />
      {!keys && fetching && <PageLoader />}
      {keys && keys.length === 0 && (
        <EmptyState title="No DKIM keys yet">
          <Text c="dimmed">Email goes out unsigned until its domain has a key.</Text>
          <Button onClick={() => setCreating(true)}>New key</Button>
        </EmptyState>
      )}
      {keys && keys.length > 0 && (
        <Stack>
          {keys.map((key) => (
            <KeyCard key={key._id} dkimKey={key} />
          ))}
        </Stack>
      )}
      {creating && <NewDkimKeyForm onClose={() => setCreating(false)} />}
    </>
  );
}

/** Whether the last check found the key's record in DNS, as a badge. */
function StatusBadge({ published, checkedAt }: Pick<DkimKeyFieldsFragment, 'published' | 'checkedAt'>) {
  if (published === null || published === undefined) return <Badge color="gray" variant="light" tt="none">Not checked</Badge>;
  const when = `Checked ${formatDateTime(checkedAt)}`;
  return published ? (
    <Badge color="green" variant="dot" tt="none" title={when}>
      Published
    </Badge>
  ) : (
    <Badge color="#b02525" variant="dot" tt="none" title={when}>
      Not in DNS
    </Badge>
  );
}

/** One key: what to publish, the last check's outcome, and its actions. */
function KeyCard({ dkimKey }: { dkimKey: DkimKeyFieldsFragment }) {
  const [checkState, check] = useMutation(CheckDkimKey);
  const [deleteState, remove] = useMutation(DeleteDkimKey);
  const [outcome, setOutcome] = useState<DkimCheckResultFragment | null>(null);
  const headingId = `dkim-${dkimKey._id}`;

  const runCheck = async () => {
    const result = await check({ id: dkimKey._id });
    if (result.data) setOutcome(result.data.checkDkimKey);
  };

  return (
    <Paper withBorder p="lg" radius="md" component="section" aria-labelledby={headingId}>
      <Stack gap="sm">
        <Group justify="space-between" align="flex-start">
          <Stack gap={4}>
            <Group gap="xs">
              <Title order={3} size="h4" id={headingId}>
                {dkimKey.dnsName}
              </Title>
              <Badge variant="light" tt="none">
                {ALGORITHM_LABELS[dkimKey.algorithm]}
              </Badge>
              <StatusBadge published={dkimKey.published} checkedAt={dkimKey.checkedAt} />
            </Group>
            <Text size="sm" c="dimmed">
              Signs email from {dkimKey.domain} with selector <Code>{dkimKey.selector}</Code>. Created {formatDateTime(dkimKey.createdAt)}.
            </Text>
          </Stack>
          <Group gap="xs" wrap="nowrap">
            <Button size="xs" variant="default" loading={checkState.fetching} aria-label={`Check DNS for ${dkimKey.dnsName}`} onClick={() => void runCheck()}>
              Check DNS
            </Button>
            <Button
              size="xs"
              color="red.9"
              variant="outline"
              loading={deleteState.fetching}
              aria-label={`Delete ${dkimKey.dnsName}`}
              onClick={() => {
                if (confirm(`Delete the key ${dkimKey.dnsName}? Email from ${dkimKey.domain} is no longer signed with it; remove its record from DNS afterwards.`)) {
                  void remove({ id: dkimKey._id });
                }
              }}
            >
              Delete
            </Button>
          </Group>
        </Group>
        <ErrorAlert error={checkState.error ?? deleteState.error} />
        {outcome && <CheckOutcome outcome={outcome} name={dkimKey.dnsName} onClose={() => setOutcome(null)} />}
        <CopyValue label={`Name (${dkimKey.dnsType} record)`} value={dkimKey.dnsName} buttonLabel="Copy name" />
        <CopyValue label="Record" value={dkimKey.record} buttonLabel="Copy record">
          Publish it as a single TXT record; a DNS provider may split it into quoted strings of 255 characters, which is the same record.
        </CopyValue>
      </Stack>
    </Paper>
  );
}

/** What the last check found at the key's name. */
function CheckOutcome({ outcome, name, onClose }: { outcome: DkimCheckResultFragment; name: string; onClose: () => void }) {
  return (
    <Alert
      role="status"
      color={outcome.matches ? 'indigo' : 'red'}
      title={outcome.matches ? 'Published: DNS has this key' : outcome.published ? 'Published, but not this key' : 'Not published'}
      withCloseButton
      closeButtonLabel="Dismiss"
      onClose={onClose}
    >
      <Text size="sm">{outcome.matches ? `The record at ${name} matches: receivers can verify the signatures.` : outcome.problem}</Text>
      {!outcome.matches && outcome.found.length > 0 && (
        <>
          <Text size="sm" mt="xs">
            Found there:
          </Text>
          <List size="sm">
            {outcome.found.map((record) => (
              <List.Item key={record} style={{ wordBreak: 'break-all' }}>
                <Code>{record}</Code>
              </List.Item>
            ))}
          </List>
        </>
      )}
    </Alert>
  );
}
