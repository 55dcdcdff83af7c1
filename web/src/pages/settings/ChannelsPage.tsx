import { Button, Group, NativeSelect, NumberInput, Paper, PasswordInput, SimpleGrid, Stack, Switch, Text, TextInput, Textarea, Title } from '@mantine/core';
import { useState, type FormEvent, type ReactNode } from 'react';
import { useMutation, useQuery } from 'urql';
import { ErrorAlert } from '../../components/ErrorAlert';
import { PageHeader } from '../../components/PageHeader';
import { PageLoader } from '../../components/PageLoader';
import { graphql } from '../../gql';
import type { ChannelsCredentialFieldsFragment, CredentialsInput } from '../../gql/graphql';
import { fieldErrors } from '../../lib/errors';
import { CopyValue } from './CopyValue';

/** What the page shows of the credentials, read and written alike. */
graphql(`
  fragment ChannelsCredentialFields on OrganizationCredentials {
    sms_apiUrl
    sms_apiKey
    sms_partnerID
    sms_shortCode
    sms_reportUrl
    email_host
    email_port
    email_user
    email_pass
    email_from
    email_secure
    email_tls_verify
    email_tls_ca
    whatsapp_phone_number_id
    whatsapp_app_secret_set
    whatsapp_verify_token_set
    whatsapp_webhookUrl
    sms_rate
    email_rate
    whatsapp_rate
  }
`);

const ChannelsCredentials = graphql(`
  query ChannelsCredentials {
    organization {
      _id
      credentials {
        ...ChannelsCredentialFields
      }
    }
  }
`);

const ChannelsUpdateCredentials = graphql(`
  mutation ChannelsUpdateCredentials($input: CredentialsInput!) {
    updateCredentials(input: $input) {
      _id
      credentials {
        ...ChannelsCredentialFields
      }
    }
  }
`);

type Credentials = ChannelsCredentialFieldsFragment;

/**
 * The fields of a form that differ from what is stored: `CredentialsInput` keeps whatever is left
 * out, so only changes are sent, and a secret only when something was typed into it.
 */
function changes(stored: Record<string, unknown>, values: Record<string, string>, secrets: string[] = []): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [field, value] of Object.entries(values)) {
    if (secrets.includes(field) ? value !== '' : value !== (stored[field] ?? '')) out[field] = value;
  }
  return out;
}

/** A channel's rate as its input holds it: a number, or '' for the default. */
type RateValue = string | number;

/**
 * The rate to send when the input differs from the stored one: a number, or null when emptied (the
 * default applies again); undefined when unchanged. Out-of-range values go to the server, whose 400
 * lands on the field.
 */
function rateChange(stored: number | null | undefined, value: RateValue): number | null | undefined {
  const next = value === '' ? null : Number(value);
  return next === (stored ?? null) ? undefined : next;
}

/** A channel's sending rate: empty is the default, which `defaults` says. */
function RateInput({ channel, value, onChange, error, defaults }: { channel: string; value: RateValue; onChange: (v: RateValue) => void; error?: string; defaults: string }) {
  return (
    <NumberInput
      label={`${channel} rate (messages per second)`}
      description={`${defaults} The provider’s throttling answers slow it down for a while.`}
      placeholder="Default"
      value={value}
      onChange={onChange}
      error={error}
      min={0.1}
      max={10000}
      clampBehavior="none"
      allowNegative={false}
      hideControls
      inputMode="decimal"
    />
  );
}

/** A secret's state for its field's description: whether it is set, never its value. */
function secretState(set: boolean, masked?: string | null): string {
  if (!set) return 'Not set.';
  return `Set${masked ? ` (${masked})` : ''}. Leave blank to keep it.`;
}

/** The organization's channel credentials, one form per channel, and the URLs to give the providers. */
export default function ChannelsPage() {
  const [{ data, fetching, error }] = useQuery({ query: ChannelsCredentials });
  const credentials = data?.organization.credentials;
  return (
    <>
      <PageHeader title="Channels" />
      <Text mb="md" maw={720}>
        The accounts your messages go out through. Secrets are stored encrypted and never shown again: a secret field left blank keeps the
        value already set.
      </Text>
      <ErrorAlert error={error} />
      {!credentials && fetching && <PageLoader />}
      {credentials && (
        <Stack gap="lg">
          <SmsForm credentials={credentials} />
          <EmailForm credentials={credentials} />
          <WhatsAppForm credentials={credentials} />
        </Stack>
      )}
    </>
  );
}

/** One channel's card: its title, its form, and a save button named after it. */
function ChannelForm({ title, save, children }: { title: string; save: () => Promise<boolean>; children: (saved: boolean) => ReactNode }) {
  const [saved, setSaved] = useState(false);
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setSaved(false);
    setSaved(await save());
  };
  return (
    <Paper withBorder p="lg" radius="md" component="form" onSubmit={submit} aria-label={`${title} settings`}>
      <Stack>
        <Title order={3}>{title}</Title>
        {children(saved)}
      </Stack>
    </Paper>
  );
}

/** The save button of a channel's form, and a note once saved. */
function SaveRow({ label, fetching, saved }: { label: string; fetching: boolean; saved: boolean }) {
  return (
    <Group justify="flex-end">
      {saved && (
        <Text size="sm" role="status">
          Saved.
        </Text>
      )}
      <Button type="submit" loading={fetching}>
        {label}
      </Button>
    </Group>
  );
}

function useSaveCredentials() {
  const [state, update] = useMutation(ChannelsUpdateCredentials);
  const save = async (input: CredentialsInput) => {
    if (!Object.keys(input).length) return true;
    const result = await update({ input });
    return !result.error;
  };
  return { state, save, errors: fieldErrors(state.error) };
}

function SmsForm({ credentials: c }: { credentials: Credentials }) {
  const [form, setForm] = useState({ sms_apiKey: '', sms_partnerID: c.sms_partnerID ?? '', sms_shortCode: c.sms_shortCode ?? '' });
  const [rate, setRate] = useState<RateValue>(c.sms_rate ?? '');
  const { state, save, errors } = useSaveCredentials();
  const set = (field: keyof typeof form) => (e: { currentTarget: { value: string } }) => setForm({ ...form, [field]: e.currentTarget.value });
  return (
    <ChannelForm
      title="SMS"
      save={async () => {
        const input: CredentialsInput = changes(c, form, ['sms_apiKey']);
        const sms_rate = rateChange(c.sms_rate, rate);
        if (sms_rate !== undefined) input.sms_rate = sms_rate;
        const ok = await save(input);
        if (ok) setForm((f) => ({ ...f, sms_apiKey: '' }));
        return ok;
      }}
    >
      {(saved) => (
        <>
          {!Object.keys(errors).length && <ErrorAlert error={state.error} />}
          <Text size="sm">
            Gateway: <Text span ff="monospace">{c.sms_apiUrl}</Text> (set by the platform)
          </Text>
          <SimpleGrid cols={{ base: 1, md: 3 }}>
            <PasswordInput label="API key" autoComplete="off" value={form.sms_apiKey} onChange={set('sms_apiKey')} error={errors.sms_apiKey} description={secretState(!!c.sms_apiKey, c.sms_apiKey)} />
            <TextInput label="Partner ID" value={form.sms_partnerID} onChange={set('sms_partnerID')} error={errors.sms_partnerID} />
            <TextInput label="Short code" value={form.sms_shortCode} onChange={set('sms_shortCode')} error={errors.sms_shortCode} description="The sender id messages go out from." />
            <RateInput channel="SMS" value={rate} onChange={setRate} error={errors.sms_rate} defaults="Empty: the platform’s default if it sets one, else unpaced." />
          </SimpleGrid>
          {/* Shown to admins only: the server leaves it null for other roles. */}
          {c.sms_reportUrl && (
            <CopyValue label="Delivery report URL" value={c.sms_reportUrl} buttonLabel="Copy delivery report URL">
              Set it as the delivery report callback in your SMS gateway account. It carries a secret token for your organization: keep it private.
            </CopyValue>
          )}
          <SaveRow label="Save SMS settings" fetching={state.fetching} saved={saved} />
        </>
      )}
    </ChannelForm>
  );
}

/** The SMTP connection's TLS modes, as `email_secure` takes them. */
const TLS_MODES = [
  { value: 'starttls-if-offered', label: 'STARTTLS when offered (default except on port 465)' },
  { value: 'starttls', label: 'STARTTLS required (never in clear)' },
  { value: 'tls', label: 'Implicit TLS (default on port 465)' },
  { value: 'none', label: 'None (never TLS)' },
];

function EmailForm({ credentials: c }: { credentials: Credentials }) {
  const [form, setForm] = useState({
    email_host: c.email_host ?? '',
    email_port: c.email_port ?? '',
    email_user: c.email_user ?? '',
    email_pass: '',
    email_from: c.email_from ?? '',
    email_secure: c.email_secure ?? '',
    email_tls_ca: c.email_tls_ca ?? '',
  });
  const [verify, setVerify] = useState(c.email_tls_verify ?? true);
  const [rate, setRate] = useState<RateValue>(c.email_rate ?? '');
  const { state, save, errors } = useSaveCredentials();
  const set = (field: keyof typeof form) => (e: { currentTarget: { value: string } }) => setForm({ ...form, [field]: e.currentTarget.value });
  return (
    <ChannelForm
      title="Email (SMTP)"
      save={async () => {
        const input: CredentialsInput = changes(c, form, ['email_pass']);
        if (verify !== (c.email_tls_verify ?? true)) input.email_tls_verify = verify;
        const email_rate = rateChange(c.email_rate, rate);
        if (email_rate !== undefined) input.email_rate = email_rate;
        const ok = await save(input);
        if (ok) setForm((f) => ({ ...f, email_pass: '' }));
        return ok;
      }}
    >
      {(saved) => (
        <>
          {!Object.keys(errors).length && <ErrorAlert error={state.error} />}
          <SimpleGrid cols={{ base: 1, md: 2 }}>
            <TextInput label="SMTP host" value={form.email_host} onChange={set('email_host')} error={errors.email_host} placeholder="smtp.example.com" />
            <TextInput label="Port" inputMode="numeric" value={form.email_port} onChange={set('email_port')} error={errors.email_port} placeholder="587" />
            <TextInput label="User name" autoComplete="off" value={form.email_user} onChange={set('email_user')} error={errors.email_user} />
            <PasswordInput label="Password" autoComplete="new-password" value={form.email_pass} onChange={set('email_pass')} error={errors.email_pass} description={secretState(!!c.email_pass, c.email_pass)} />
            <TextInput label="From address" type="email" value={form.email_from} onChange={set('email_from')} error={errors.email_from} placeholder="news@example.com" />
            <NativeSelect
              label="TLS mode"
              data={[{ value: '', label: 'Default for the port', disabled: !!c.email_secure }, ...TLS_MODES]}
              value={form.email_secure}
              onChange={set('email_secure')}
              error={errors.email_secure}
            />
            <RateInput channel="Email" value={rate} onChange={setRate} error={errors.email_rate} defaults="Empty: the platform’s default if it sets one, else unpaced." />
          </SimpleGrid>
          <Switch
            label="Verify the server’s certificate"
            description="Turn off only for a relay you trust; prefer giving its certificate below."
            checked={verify}
            onChange={(e) => setVerify(e.currentTarget.checked)}
            error={errors.email_tls_verify}
          />
          <Textarea
            label="Trusted certificates (PEM)"
            description="Certificates the server’s certificate must chain to, instead of the public roots; leave empty to use the public roots."
            autosize
            minRows={2}
            maxRows={8}
            styles={{ input: { fontFamily: 'var(--mantine-font-family-monospace)' } }}
            value={form.email_tls_ca}
            onChange={set('email_tls_ca')}
            error={errors.email_tls_ca}
          />
          <SaveRow label="Save email settings" fetching={state.fetching} saved={saved} />
        </>
      )}
    </ChannelForm>
  );
}

function WhatsAppForm({ credentials: c }: { credentials: Credentials }) {
  const [form, setForm] = useState({ whatsapp_phone_number_id: c.whatsapp_phone_number_id ?? '', whatsapp_access_token: '', whatsapp_app_secret: '', whatsapp_verify_token: '' });
  const [rate, setRate] = useState<RateValue>(c.whatsapp_rate ?? '');
  const { state, save, errors } = useSaveCredentials();
  const set = (field: keyof typeof form) => (e: { currentTarget: { value: string } }) => setForm({ ...form, [field]: e.currentTarget.value });
  const secrets = ['whatsapp_access_token', 'whatsapp_app_secret', 'whatsapp_verify_token'];
  return (
    <ChannelForm
      title="WhatsApp"
      save={async () => {
        const input: CredentialsInput = changes(c, form, secrets);
        const whatsapp_rate = rateChange(c.whatsapp_rate, rate);
        if (whatsapp_rate !== undefined) input.whatsapp_rate = whatsapp_rate;
        const ok = await save(input);
        if (ok) setForm((f) => ({ ...f, whatsapp_access_token: '', whatsapp_app_secret: '', whatsapp_verify_token: '' }));
        return ok;
      }}
    >
      {(saved) => (
        <>
          {!Object.keys(errors).length && <ErrorAlert error={state.error} />}
          <SimpleGrid cols={{ base: 1, md: 2 }}>
            <TextInput
              label="Phone number ID"
              inputMode="numeric"
              value={form.whatsapp_phone_number_id}
              onChange={set('whatsapp_phone_number_id')}
              error={errors.whatsapp_phone_number_id}
              description="From the WhatsApp Cloud API settings of your Meta app."
            />
            <PasswordInput
              label="Access token"
              autoComplete="off"
              value={form.whatsapp_access_token}
              onChange={set('whatsapp_access_token')}
              error={errors.whatsapp_access_token}
              description="Never shown once saved. Leave blank to keep the one set."
            />
            <PasswordInput
              label="App secret"
              autoComplete="off"
              value={form.whatsapp_app_secret}
              onChange={set('whatsapp_app_secret')}
              error={errors.whatsapp_app_secret}
              description={secretState(c.whatsapp_app_secret_set)}
            />
            <PasswordInput
              label="Verify token"
              autoComplete="off"
              value={form.whatsapp_verify_token}
              onChange={set('whatsapp_verify_token')}
              error={errors.whatsapp_verify_token}
              description={secretState(c.whatsapp_verify_token_set)}
            />
            <RateInput channel="WhatsApp" value={rate} onChange={setRate} error={errors.whatsapp_rate} defaults="Empty: WhatsApp Cloud’s default, 80." />
          </SimpleGrid>
          <CopyValue label="Webhook callback URL" value={c.whatsapp_webhookUrl} buttonLabel="Copy webhook URL">
            Give it to your Meta app’s WhatsApp webhook, with the verify token above, for delivery statuses and replies. Keep it private.
          </CopyValue>
          <SaveRow label="Save WhatsApp settings" fetching={state.fetching} saved={saved} />
        </>
      )}
    </ChannelForm>
  );
}
