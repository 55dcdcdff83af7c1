import { Button, Checkbox, Group, Modal, NativeSelect, NumberInput, PasswordInput, SimpleGrid, Stack, Switch, Text, TextInput } from '@mantine/core';
import { useId, useState, type FormEvent } from 'react';
import { useMutation } from 'urql';
import { ErrorAlert } from '../../components/ErrorAlert';
import { graphql } from '../../gql';
import type { Channel, ProviderFieldsFragment, ProviderTypeFieldsFragment } from '../../gql/graphql';
import { fieldErrors } from '../../lib/errors';
import { formatRate } from '../../lib/format';

/** What the Providers page shows of a provider, read and written alike. */
graphql(`
  fragment ProviderFields on Provider {
    _id
    channel
    type
    name
    position
    enabled
    rate
    settings
    secrets
    missing
    reportUrl
    health {
      circuit
      circuitChangedAt
      lastFailureAt
      lastError
    }
    updatedAt
  }
`);

/** A provider type, with the fields its form is built from. */
graphql(`
  fragment ProviderTypeFields on ProviderType {
    type
    channel
    label
    defaultRate
    fields {
      name
      secret
      required
      kind
      description
    }
  }
`);

const ProviderCreate = graphql(`
  mutation ProviderCreate($input: CreateProviderInput!) {
    createProvider(input: $input) {
      ...ProviderFields
    }
  }
`);

const ProviderUpdate = graphql(`
  mutation ProviderUpdate($id: ID!, $input: UpdateProviderInput!) {
    updateProvider(id: $id, input: $input) {
      ...ProviderFields
    }
  }
`);

export type ProviderRow = ProviderFieldsFragment;
export type ProviderTypeRow = ProviderTypeFieldsFragment;
type Field = ProviderTypeRow['fields'][number];

export const CHANNELS: Channel[] = ['sms', 'email', 'whatsapp'];
export const CHANNEL_LABELS: Record<Channel, string> = { sms: 'SMS', email: 'Email', whatsapp: 'WhatsApp' };

/** Words of a field's name the console writes in capitals. */
const ACRONYMS = new Set(['api', 'id', 'sid', 'tls', 'ca', 'url', 'npi', 'ton']);
/** Fields whose name alone reads poorly. */
const FIELD_LABELS: Record<string, string> = { pass: 'Password', tlsVerify: 'Verify the server’s certificate', tlsCa: 'Trusted certificates (PEM)' };

/** A field's name as a label: `apiKey` is "API key", `partnerID` "Partner ID", `accountSid` "Account SID". */
export function fieldLabel(name: string): string {
  if (FIELD_LABELS[name]) return FIELD_LABELS[name];
  const words = name
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .replace(/([A-Z]+)([A-Z][a-z])/g, '$1 $2')
    .split(/\s+/)
    .map((w) => (ACRONYMS.has(w.toLowerCase()) ? w.toUpperCase() : w.toLowerCase()));
  const label = words.join(' ');
  return label.charAt(0).toUpperCase() + label.slice(1);
}

/** A label inside a sentence: "API key" stays, "App secret" is "app secret". */
const lowerWords = (label: string) =>
  label
    .split(' ')
    .map((w) => (w.length > 1 && w === w.toUpperCase() ? w : w.toLowerCase()))
    .join(' ');

/** What a rate of "empty" means for a type: its documented default, else the platform's. */
export function defaultRateText(type: ProviderTypeRow | undefined): string {
  return type?.defaultRate != null ? `the provider’s default, ${formatRate(type.defaultRate)}` : 'the platform’s default if it sets one, else unpaced';
}

/** A boolean field's state when it is not set: what its description says the default is. */
const booleanDefault = (field: Field) => /\bdefault(?::)? (true|on)\b/i.test(field.description);

/** The id Mantine gives an input's description. */
const descriptionId = (inputId: string) => `${inputId}-description`;

/** The key of a field in `settings`/`secrets`, as the server's 400 names it (`secrets.apiKey`). */
const pathOf = (field: Field) => `${field.secret ? 'secrets' : 'settings'}.${field.name}`;

type Values = Record<string, string | number | boolean>;

/** The form's starting values: a provider's settings (secrets are never shown: they start empty). */
function initialValues(type: ProviderTypeRow | undefined, provider: ProviderRow | null): Values {
  const values: Values = {};
  for (const field of type?.fields ?? []) {
    const stored = field.secret ? undefined : (provider?.settings as Values | undefined)?.[field.name];
    if (field.kind === 'boolean') values[field.name] = typeof stored === 'boolean' ? stored : booleanDefault(field);
    else values[field.name] = stored === undefined || stored === null ? '' : (stored as string | number);
  }
  return values;
}

/**
 * Adds a provider (no `provider`: choose the channel and the type) or changes one, in a dialog. The
 * form is built from the type's fields: text, whole numbers, switches, and password inputs for the
 * secrets, which are write-only: one left empty is kept.
 */
export function ProviderForm({
  provider,
  types,
  channel: initialChannel,
  onClose,
}: {
  provider: ProviderRow | null;
  types: ProviderTypeRow[];
  /** The channel a new provider is for, to start with. */
  channel?: Channel;
  onClose: () => void;
}) {
  const [channel, setChannel] = useState<Channel>(provider?.channel ?? initialChannel ?? 'sms');
  const ofChannel = types.filter((t) => t.channel === channel);
  const [typeName, setTypeName] = useState(provider?.type ?? ofChannel[0]?.type ?? '');
  const type = types.find((t) => t.type === typeName);
  const [name, setName] = useState(provider?.name ?? '');
  const [enabled, setEnabled] = useState(provider?.enabled ?? true);
  const [rate, setRate] = useState<string | number>(provider?.rate ?? '');
  const [values, setValues] = useState<Values>(() => initialValues(type, provider));
  const [removed, setRemoved] = useState<Set<string>>(new Set());
  const [createState, create] = useMutation(ProviderCreate);
  const [updateState, update] = useMutation(ProviderUpdate);
  const state = provider ? updateState : createState;
  const errors = fieldErrors(state.error);
  const shown = new Set(['name', 'rate', 'enabled', 'type', 'channel', ...(type?.fields ?? []).map(pathOf)]);
  // The server's message on its own when it names no field of the form (or none at all).
  const unplaced = !!state.error && (!Object.keys(errors).length || Object.keys(errors).some((key) => !shown.has(key)));

  const chooseChannel = (next: Channel) => {
    setChannel(next);
    chooseType(types.find((t) => t.channel === next)?.type ?? '');
  };
  const chooseType = (next: string) => {
    setTypeName(next);
    setValues(initialValues(types.find((t) => t.type === next), null));
  };
  const setValue = (field: string, value: string | number | boolean) => setValues((v) => ({ ...v, [field]: value }));

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    if (!type) return;
    const before = initialValues(type, provider);
    const settings: Record<string, unknown> = {};
    const secrets: Record<string, unknown> = {};
    for (const field of type.fields) {
      const raw = values[field.name];
      const value = typeof raw === 'string' ? raw.trim() : raw;
      if (field.secret) {
        if (removed.has(field.name)) secrets[field.name] = null;
        else if (value !== '') secrets[field.name] = value;
        continue;
      }
      if (provider) {
        // Only what changed; an emptied field is removed (null).
        if (value === before[field.name]) continue;
        settings[field.name] = value === '' ? null : value;
      } else if (value !== '' && !(field.kind === 'boolean' && value === before[field.name])) {
        settings[field.name] = value;
      }
    }
    const rateValue = rate === '' ? null : Number(rate);
    if (provider) {
      const input = {
        ...(name.trim() !== provider.name && { name: name.trim() }),
        ...(enabled !== provider.enabled && { enabled }),
        ...(rateValue !== (provider.rate ?? null) && { rate: rateValue }),
        ...(Object.keys(settings).length > 0 && { settings }),
        ...(Object.keys(secrets).length > 0 && { secrets }),
      };
      const result = await update({ id: provider._id, input });
      if (!result.error) onClose();
    } else {
      const input = {
        type: type.type,
        enabled,
        ...(name.trim() && { name: name.trim() }),
        ...(rateValue !== null && { rate: rateValue }),
        settings,
        secrets,
      };
      const result = await create({ input });
      if (!result.error) onClose();
    }
  };

  return (
    <Modal opened onClose={onClose} title={provider ? `Edit ${provider.name}` : 'Add provider'} size="lg">
      <form onSubmit={submit} noValidate>
        <Stack>
          {unplaced && <ErrorAlert error={state.error} />}
          {provider ? (
            <Text size="sm">
              {CHANNEL_LABELS[provider.channel]} · {type?.label ?? provider.type}
            </Text>
          ) : (
            <SimpleGrid cols={{ base: 1, sm: 2 }}>
              <NativeSelect
                label="Channel"
                data={CHANNELS.map((c) => ({ value: c, label: CHANNEL_LABELS[c] }))}
                value={channel}
                onChange={(e) => chooseChannel(e.currentTarget.value as Channel)}
                error={errors.channel}
              />
              <NativeSelect
                label="Type"
                data={ofChannel.map((t) => ({ value: t.type, label: t.label }))}
                value={typeName}
                onChange={(e) => chooseType(e.currentTarget.value)}
                error={errors.type}
                data-autofocus
              />
            </SimpleGrid>
          )}
          <SimpleGrid cols={{ base: 1, sm: 2 }}>
            <TextInput
              label="Name"
              description="What your team calls it."
              placeholder={type?.label}
              value={name}
              onChange={(e) => setName(e.currentTarget.value)}
              error={errors.name}
              data-autofocus={provider ? true : undefined}
            />
            <NumberInput
              label="Rate (messages per second)"
              description={`Empty: ${defaultRateText(type)}.`}
              placeholder="Default"
              value={rate}
              onChange={setRate}
              error={errors.rate}
              min={0.1}
              max={10000}
              clampBehavior="none"
              allowNegative={false}
              hideControls
              inputMode="decimal"
            />
          </SimpleGrid>
          {type && type.fields.length > 0 && (
            <SimpleGrid cols={{ base: 1, sm: 2 }}>
              {type.fields.map((field) => (
                <FieldInput
                  key={`${type.type}.${field.name}`}
                  field={field}
                  value={values[field.name] ?? ''}
                  onChange={(v) => setValue(field.name, v)}
                  error={errors[pathOf(field)]}
                  secretSet={!!provider && (provider.secrets as Record<string, unknown>)[field.name] === 'set'}
                  removed={removed.has(field.name)}
                  onRemove={(remove) =>
                    setRemoved((r) => {
                      const next = new Set(r);
                      if (remove) next.add(field.name);
                      else next.delete(field.name);
                      return next;
                    })
                  }
                />
              ))}
            </SimpleGrid>
          )}
          <Switch label="Enabled: sending uses it" checked={enabled} onChange={(e) => setEnabled(e.currentTarget.checked)} error={errors.enabled} />
          <Group justify="flex-end">
            <Button variant="default" onClick={onClose}>
              Cancel
            </Button>
            <Button type="submit" loading={state.fetching} disabled={!type}>
              {provider ? 'Save provider' : 'Create provider'}
            </Button>
          </Group>
        </Stack>
      </form>
    </Modal>
  );
}

/** One field of a type: its input by kind, required ones marked, a secret's state beside it. */
function FieldInput({
  field,
  value,
  onChange,
  error,
  secretSet,
  removed,
  onRemove,
}: {
  field: Field;
  value: string | number | boolean;
  onChange: (value: string | number | boolean) => void;
  error?: string;
  secretSet: boolean;
  removed: boolean;
  onRemove: (remove: boolean) => void;
}) {
  const label = fieldLabel(field.name);
  const inputId = useId();
  const common = { label, error, withAsterisk: field.required, 'aria-required': field.required || undefined };
  if (field.kind === 'boolean') {
    return <Switch label={label} description={field.description} checked={value === true} onChange={(e) => onChange(e.currentTarget.checked)} error={error} />;
  }
  if (field.kind === 'integer') {
    return (
      <NumberInput
        {...common}
        description={field.description}
        value={value as string | number}
        onChange={onChange}
        allowDecimal={false}
        allowNegative={false}
        hideControls
        inputMode="numeric"
      />
    );
  }
  if (field.secret) {
    // Mantine's PasswordInput leaves the invalid state and the error out of the input's ARIA: given here.
    const described = [descriptionId(inputId), error && `${inputId}-error`].filter(Boolean).join(' ');
    return (
      <Stack gap={4}>
        <PasswordInput
          {...common}
          id={inputId}
          aria-invalid={!!error || undefined}
          aria-describedby={described}
          autoComplete="new-password"
          description={secretSet ? `${field.description} Set — leave empty to keep.` : field.description}
          placeholder={secretSet ? 'Set — leave empty to keep' : undefined}
          value={value as string}
          onChange={(e) => onChange(e.currentTarget.value)}
          disabled={removed}
        />
        {secretSet && !field.required && <Checkbox size="xs" label={`Remove the ${lowerWords(label)}`} checked={removed} onChange={(e) => onRemove(e.currentTarget.checked)} />}
      </Stack>
    );
  }
  return <TextInput {...common} description={field.description} autoComplete="off" value={value as string} onChange={(e) => onChange(e.currentTarget.value)} />;
}
