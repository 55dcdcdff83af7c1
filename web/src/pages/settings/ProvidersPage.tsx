import { Anchor, Badge, Button, Group, Paper, Stack, Switch, Text, ThemeIcon, Title, VisuallyHidden } from '@mantine/core';
import { useEffect, useId, useState } from 'react';
import { Link } from 'react-router';
import { useMutation, useQuery } from 'urql';
import { EmptyState } from '../../components/EmptyState';
import { ErrorAlert } from '../../components/ErrorAlert';
import { PageHeader } from '../../components/PageHeader';
import { PageLoader } from '../../components/PageLoader';
import { graphql } from '../../gql';
import type { Channel } from '../../gql/graphql';
import { formatDateTime, formatRate } from '../../lib/format';
import { CopyValue } from './CopyValue';
import { CHANNEL_LABELS, CHANNELS, fieldLabel, ProviderForm, type ProviderRow, type ProviderTypeRow } from './ProviderForm';
import { ProviderTestForm } from './ProviderTestForm';

const ProvidersList = graphql(`
  query ProvidersList {
    providers {
      ...ProviderFields
    }
    providerTypes {
      ...ProviderTypeFields
    }
  }
`);

const ProviderSetEnabled = graphql(`
  mutation ProviderSetEnabled($id: ID!, $enabled: Boolean!) {
    updateProvider(id: $id, input: { enabled: $enabled }) {
      ...ProviderFields
    }
  }
`);

const ProviderReorder = graphql(`
  mutation ProviderReorder($channel: Channel!, $ids: [ID!]!) {
    reorderProviders(channel: $channel, ids: $ids) {
      ...ProviderFields
    }
  }
`);

const ProviderDelete = graphql(`
  mutation ProviderDelete($id: ID!) {
    deleteProvider(id: $id) {
      message
    }
  }
`);

type Direction = 'up' | 'down';
const moveButtonId = (id: string, direction: Direction) => `provider-move-${direction}-${id}`;

/** What the page has open: the add or edit dialog, or a provider's test dialog. */
type Dialog = { kind: 'add'; channel?: Channel } | { kind: 'edit'; provider: ProviderRow } | { kind: 'test'; provider: ProviderRow } | null;

/**
 * The providers each channel is sent through, in order, one section per channel: each provider's
 * place, health (its circuit) and setup; moved up and down, switched off and on, added, changed,
 * deleted and sent a test message through.
 */
export default function ProvidersPage() {
  const [{ data, fetching, error }] = useQuery({ query: ProvidersList });
  const [enableState, setEnabled] = useMutation(ProviderSetEnabled);
  const [reorderState, reorder] = useMutation(ProviderReorder);
  const [deleteState, deleteProvider] = useMutation(ProviderDelete);
  const [dialog, setDialog] = useState<Dialog>(null);
  // After a move, focus stays on the button that moved the provider (or its other one, at an end).
  const [moved, setMoved] = useState<{ id: string; direction: Direction; position: number } | null>(null);

  const providers = data?.providers;
  const types = data?.providerTypes ?? [];
  const mutationError = enableState.error ?? reorderState.error ?? deleteState.error;

  useEffect(() => {
    // Once the page shows the provider in its new place (the list follows the mutation's answer).
    if (!moved || providers?.find((p) => p._id === moved.id)?.position !== moved.position) return;
    const same = document.getElementById(moveButtonId(moved.id, moved.direction)) as HTMLButtonElement | null;
    const other = document.getElementById(moveButtonId(moved.id, moved.direction === 'up' ? 'down' : 'up')) as HTMLButtonElement | null;
    const target = same && !same.disabled ? same : other;
    if (!target || target.disabled) return;
    target.focus();
    setMoved(null);
  }, [moved, providers]);

  const move = async (list: ProviderRow[], provider: ProviderRow, direction: Direction) => {
    // One move at a time (the buttons stay enabled meanwhile: a disabled one would lose the focus).
    if (reorderState.fetching) return;
    const ids = list.map((p) => p._id);
    const from = ids.indexOf(provider._id);
    const to = direction === 'up' ? from - 1 : from + 1;
    if (from < 0 || to < 0 || to >= ids.length) return;
    [ids[from], ids[to]] = [ids[to]!, ids[from]!];
    const result = await reorder({ channel: provider.channel, ids });
    if (!result.error) setMoved({ id: provider._id, direction, position: to + 1 });
  };

  const remove = (provider: ProviderRow) => {
    if (confirm(`Delete the provider "${provider.name}"? Nothing is sent through it any more, at once.`)) void deleteProvider({ id: provider._id });
  };

  return (
    <>
      <PageHeader title="Providers">
        <Button onClick={() => setDialog({ kind: 'add' })}>Add provider</Button>
      </PageHeader>
      <Text mb="xs" maw={760}>
        The accounts each channel is sent through. A channel’s enabled providers are tried in order: what one cannot carry (it is down, times out,
        throttles or refuses the credentials) goes to the next. A final answer about a recipient, such as an invalid number, does not.
      </Text>
      <Text mb="md" maw={760} size="sm" c="dimmed">
        Secrets are stored encrypted and never shown again. The{' '}
        <Anchor component={Link} to="/settings/channels" size="sm" underline="always">
          Channels
        </Anchor>{' '}
        page edits each channel’s first provider of its original type (SMS gateway, SMTP relay, WhatsApp Cloud API).
      </Text>
      <ErrorAlert error={error} />
      <ErrorAlert error={mutationError} title="The change was not made" />
      {!providers && fetching && <PageLoader />}
      {providers && (
        <Stack gap="lg">
          {CHANNELS.map((channel) => (
            <ChannelSection
              key={channel}
              channel={channel}
              providers={providers.filter((p) => p.channel === channel).sort((a, b) => a.position - b.position)}
              types={types}
              onAdd={() => setDialog({ kind: 'add', channel })}
              onEdit={(provider) => setDialog({ kind: 'edit', provider })}
              onTest={(provider) => setDialog({ kind: 'test', provider })}
              onDelete={remove}
              onMove={move}
              onEnable={(provider, enabled) => setEnabled({ id: provider._id, enabled })}
            />
          ))}
        </Stack>
      )}
      {(dialog?.kind === 'add' || dialog?.kind === 'edit') && (
        <ProviderForm
          provider={dialog.kind === 'edit' ? dialog.provider : null}
          channel={dialog.kind === 'add' ? dialog.channel : undefined}
          types={types}
          onClose={() => setDialog(null)}
        />
      )}
      {dialog?.kind === 'test' && <ProviderTestForm provider={dialog.provider} onClose={() => setDialog(null)} />}
    </>
  );
}

interface ProviderActions {
  types: ProviderTypeRow[];
  onEdit: (provider: ProviderRow) => void;
  onTest: (provider: ProviderRow) => void;
  onDelete: (provider: ProviderRow) => void;
  onMove: (list: ProviderRow[], provider: ProviderRow, direction: Direction) => void;
  onEnable: (provider: ProviderRow, enabled: boolean) => Promise<unknown>;
}

/** What a channel sends, in a sentence. */
const WHAT: Record<Channel, string> = { sms: 'SMS', email: 'email', whatsapp: 'WhatsApp messages' };

/** One channel: its providers in order (first tried first), or what to do when it has none. */
function ChannelSection({ channel, providers, onAdd, ...actions }: { channel: Channel; providers: ProviderRow[]; onAdd: () => void } & ProviderActions) {
  const headingId = useId();
  const label = CHANNEL_LABELS[channel];
  return (
    <Paper withBorder p="lg" radius="md" component="section" aria-labelledby={headingId}>
      <Stack>
        <Group justify="space-between">
          <Title order={3} id={headingId}>
            {label}
          </Title>
          <Button variant="default" size="xs" onClick={onAdd}>
            Add {label} provider
          </Button>
        </Group>
        {providers.length === 0 ? (
          <EmptyState title={`No ${label} providers yet`}>
            <Text c="dimmed" ta="center">
              Add one to send {WHAT[channel]} through your own account.
            </Text>
          </EmptyState>
        ) : (
          <Stack component="ol" aria-label={`${label} providers, in the order they are tried`} gap="sm" style={{ listStyle: 'none', margin: 0, padding: 0 }}>
            {providers.map((provider, i) => (
              <ProviderItem key={provider._id} provider={provider} list={providers} place={i + 1} last={i === providers.length - 1} {...actions} />
            ))}
          </Stack>
        )}
      </Stack>
    </Paper>
  );
}

/** A provider's circuit as a badge: healthy (closed), open, or probing (half-open). */
function HealthBadge({ circuit }: { circuit: string }) {
  if (circuit === 'open')
    return (
      <Badge color="#b02525" variant="filled" miw="max-content">
        Circuit open
      </Badge>
    );
  if (circuit === 'half-open')
    return (
      <Badge color="yellow.5" autoContrast variant="filled" miw="max-content">
        Probing
      </Badge>
    );
  return (
    <Badge color="#1b6e31" variant="filled" miw="max-content">
      Healthy
    </Badge>
  );
}

/** The rate it is sent at: its own, else its type's documented default, else the platform's. */
function rateText(provider: ProviderRow, type: ProviderTypeRow | undefined): string {
  if (provider.rate != null) return formatRate(provider.rate);
  if (type?.defaultRate != null) return `${formatRate(type.defaultRate)} (the provider’s default)`;
  return 'the platform’s default';
}

function ProviderItem({
  provider,
  list,
  place,
  last,
  types,
  onEdit,
  onTest,
  onDelete,
  onMove,
  onEnable,
}: {
  provider: ProviderRow;
  list: ProviderRow[];
  /** Its place as listed (1 first): the stored positions keep the gap a deleted provider leaves. */
  place: number;
  last: boolean;
} & ProviderActions) {
  const nameId = useId();
  const type = types.find((t) => t.type === provider.type);
  const { health } = provider;
  // The switch follows the click at once, and the server's answer once it comes (its old state on an error).
  const [switching, setSwitching] = useState<boolean | null>(null);
  const toggle = async (enabled: boolean) => {
    setSwitching(enabled);
    await onEnable(provider, enabled);
    setSwitching(null);
  };
  return (
    <Paper component="li" withBorder p="md" radius="md" aria-labelledby={nameId} bg={provider.enabled ? undefined : 'gray.0'}>
      <Stack gap="sm">
        <Group justify="space-between" align="flex-start" wrap="nowrap">
          <Group gap="sm" wrap="nowrap" align="flex-start">
            <ThemeIcon radius="xl" size="lg" variant="filled">
              <VisuallyHidden>Position </VisuallyHidden>
              <Text fw={700} size="sm" c="white">
                {place}
              </Text>
            </ThemeIcon>
            <div>
              <Title order={4} size="h5" id={nameId}>
                {provider.name}
              </Title>
              {(type?.label ?? provider.type) !== provider.name && (
                <Text size="sm" c="dimmed">
                  {type?.label ?? provider.type}
                </Text>
              )}
            </div>
          </Group>
          <Group gap="xs" wrap="nowrap">
            {provider.missing.length > 0 && (
              <Badge color="orange.9" variant="outline" miw="max-content">
                Incomplete
              </Badge>
            )}
            <HealthBadge circuit={health.circuit} />
          </Group>
        </Group>
        <Group gap="xl">
          <Switch label="Enabled" checked={switching ?? provider.enabled} onChange={(e) => void toggle(e.currentTarget.checked)} />
          <Text size="sm">Rate: {rateText(provider, type)}</Text>
        </Group>
        {provider.missing.length > 0 && (
          <Text size="sm" c="orange.9">
            Missing: {provider.missing.map(fieldLabel).join(', ')}. It sends nothing until they are set.
          </Text>
        )}
        {health.circuit !== 'closed' && (
          <Stack gap={2}>
            <Text size="sm">
              {health.circuit === 'open'
                ? 'Herald sends nothing through it while it recovers: the next provider carries its messages.'
                : 'It is being probed: the next message tells whether it has recovered.'}
              {health.circuitChangedAt && ` Since ${formatDateTime(health.circuitChangedAt)}.`}
            </Text>
            {health.lastError && (
              <Text size="sm" c="red.9">
                Last error: {health.lastError}
                {health.lastFailureAt && ` (${formatDateTime(health.lastFailureAt)})`}
              </Text>
            )}
          </Stack>
        )}
        {provider.reportUrl && (
          <CopyValue label="Delivery report URL" value={provider.reportUrl} buttonLabel={`Copy ${provider.name} report URL`}>
            Set it as the delivery report callback in your {type?.label ?? provider.type} account. It carries a secret token: keep it private.
          </CopyValue>
        )}
        <Group gap="xs">
          {/* Named after the provider ("Move Twilio up"), the visible words kept in the name (a span: the label is a flex box, which drops the spaces). */}
          <Button size="xs" variant="default" id={moveButtonId(provider._id, 'up')} disabled={place === 1} onClick={() => onMove(list, provider, 'up')}>
            <span>
              Move <VisuallyHidden>{provider.name} </VisuallyHidden>up
            </span>
          </Button>
          <Button size="xs" variant="default" id={moveButtonId(provider._id, 'down')} disabled={last} onClick={() => onMove(list, provider, 'down')}>
            <span>
              Move <VisuallyHidden>{provider.name} </VisuallyHidden>down
            </span>
          </Button>
          <Button size="xs" variant="default" onClick={() => onTest(provider)}>
            <span>
              Send test<VisuallyHidden> through {provider.name}</VisuallyHidden>
            </span>
          </Button>
          <Button size="xs" variant="default" aria-label={`Edit ${provider.name}`} onClick={() => onEdit(provider)}>
            Edit
          </Button>
          <Button size="xs" color="red.9" variant="outline" aria-label={`Delete ${provider.name}`} onClick={() => onDelete(provider)}>
            Delete
          </Button>
        </Group>
      </Stack>
    </Paper>
  );
}
