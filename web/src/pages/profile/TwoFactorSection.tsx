import { Alert, Button, Code, CopyButton, Group, Image, List, Paper, SimpleGrid, Stack, Text, TextInput, Title } from '@mantine/core';
import { toDataURL } from 'qrcode';
import { useEffect, useState, type FormEvent } from 'react';
import { useMutation, useQuery } from 'urql';
import { ErrorAlert } from '../../components/ErrorAlert';
import { graphql } from '../../gql';
import type { TwoFactorStatusQuery } from '../../gql/graphql';
import { fieldErrors } from '../../lib/errors';
import { formatDateTime } from '../../lib/format';
import { CopyValue } from '../settings/CopyValue';

const TwoFactorStatusDoc = graphql(`
  query TwoFactorStatus {
    twoFactor {
      enabled
      enabledAt
      pending
      requiredByOrganization
      recoveryCodesRemaining
    }
  }
`);

const TwoFactorStart = graphql(`
  mutation TwoFactorStart {
    startTwoFactorEnrolment {
      secret
      otpauthUri
    }
  }
`);

const TwoFactorConfirm = graphql(`
  mutation TwoFactorConfirm($input: TwoFactorCodeInput!) {
    confirmTwoFactor(input: $input) {
      recoveryCodes
    }
  }
`);

const TwoFactorDisable = graphql(`
  mutation TwoFactorDisable($input: TwoFactorCodeInput!) {
    disableTwoFactor(input: $input) {
      enabled
    }
  }
`);

const TwoFactorNewCodes = graphql(`
  mutation TwoFactorNewCodes($input: TwoFactorCodeInput!) {
    regenerateRecoveryCodes(input: $input) {
      recoveryCodes
    }
  }
`);

type Status = TwoFactorStatusQuery['twoFactor'];

/**
 * The caller's two-factor authentication: set it up (a QR code drawn here, never fetched from
 * anywhere, and the secret as text), confirm it with a first code, keep the recovery codes shown
 * once; later, new recovery codes or turning it off, each with a current code.
 */
export function TwoFactorSection() {
  const [{ data, error }, refetch] = useQuery({ query: TwoFactorStatusDoc });
  const [recoveryCodes, setRecoveryCodes] = useState<string[] | null>(null);
  const status = data?.twoFactor;
  const shown = (codes: string[]) => {
    setRecoveryCodes(codes);
    refetch({ requestPolicy: 'network-only' });
  };
  return (
    <Paper withBorder p="lg" radius="md" component="section" aria-label="Two-factor authentication">
      <Stack>
        <Title order={3}>Two-factor authentication</Title>
        <ErrorAlert error={error} />
        {status?.requiredByOrganization && !status.enabled && (
          <Alert color="indigo" title="Required by your organization" role="alert">
            Your organization requires two-factor authentication. Set it up below to continue using Herald.
          </Alert>
        )}
        {recoveryCodes && <RecoveryCodesPanel codes={recoveryCodes} onDone={() => setRecoveryCodes(null)} />}
        {status && !status.enabled && <Enrolment onEnabled={shown} />}
        {status?.enabled && !recoveryCodes && <Enabled status={status} onNewCodes={shown} onDisabled={() => refetch({ requestPolicy: 'network-only' })} />}
      </Stack>
    </Paper>
  );
}

/** Starting an enrolment, then the QR code, the secret and the code that confirms it. */
function Enrolment({ onEnabled }: { onEnabled: (codes: string[]) => void }) {
  const [startState, start] = useMutation(TwoFactorStart);
  const [confirmState, confirm] = useMutation(TwoFactorConfirm);
  const [code, setCode] = useState('');
  const [qr, setQr] = useState<string | null>(null);
  const enrolment = startState.data?.startTwoFactorEnrolment;
  const errors = fieldErrors(confirmState.error);

  useEffect(() => {
    if (!enrolment) return;
    let current = true;
    void toDataURL(enrolment.otpauthUri, { margin: 1, width: 200, errorCorrectionLevel: 'M' }).then((url) => current && setQr(url));
    return () => {
      current = false;
    };
  }, [enrolment]);

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const result = await confirm({ input: { code } });
    const codes = result.data?.confirmTwoFactor.recoveryCodes;
    if (codes) onEnabled(codes);
  };

  if (!enrolment) {
    return (
      <Stack align="flex-start">
        <Text size="sm">
          Two-factor authentication is off. With it on, logging in also asks for a code from an authenticator app on your phone (such as Google Authenticator,
          Microsoft Authenticator, 1Password or Authy).
        </Text>
        <ErrorAlert error={startState.error} />
        <Button onClick={() => void start({})} loading={startState.fetching}>
          Set up two-factor authentication
        </Button>
      </Stack>
    );
  }
  return (
    <Stack component="form" onSubmit={submit} aria-label="Confirm two-factor authentication">
      <Text size="sm">Scan this QR code with your authenticator app, or type the secret key into it. Then enter the code the app shows.</Text>
      <SimpleGrid cols={{ base: 1, sm: 2 }}>
        {qr ? <Image src={qr} alt="QR code to scan with your authenticator app" w={200} h={200} /> : <div />}
        <CopyValue label="Secret key" value={enrolment.secret} buttonLabel="Copy secret key">
          For apps that take the key typed in: time-based, 6 digits, every 30 seconds.
        </CopyValue>
      </SimpleGrid>
      {!Object.keys(errors).length && <ErrorAlert error={confirmState.error} />}
      <Group align="flex-end">
        <TextInput
          label="Verification code"
          required
          autoComplete="one-time-code"
          inputMode="numeric"
          value={code}
          onChange={(e) => setCode(e.currentTarget.value)}
          error={errors.code}
        />
        <Button type="submit" loading={confirmState.fetching}>
          Verify and turn on
        </Button>
      </Group>
    </Stack>
  );
}

/** The recovery codes, shown once after enrolment or renewal. */
function RecoveryCodesPanel({ codes, onDone }: { codes: string[]; onDone: () => void }) {
  const text = codes.join('\n');
  return (
    <Stack aria-label="Recovery codes">
      <Alert color="indigo" title="Save your recovery codes">
        Each code logs you in once if you lose your phone. This is the only time Herald shows them: copy them somewhere safe, such as a password manager.
      </Alert>
      <Code block>{text}</Code>
      <Group>
        <CopyButton value={text} timeout={2000}>
          {({ copied, copy }) => (
            <Button variant={copied ? 'filled' : 'default'} onClick={copy}>
              {copied ? 'Copied' : 'Copy recovery codes'}
            </Button>
          )}
        </CopyButton>
        <Button onClick={onDone}>I have saved my recovery codes</Button>
      </Group>
    </Stack>
  );
}

/** Two-factor authentication on: new recovery codes, or turning it off, each with a current code. */
function Enabled({ status, onNewCodes, onDisabled }: { status: Status; onNewCodes: (codes: string[]) => void; onDisabled: () => void }) {
  const [code, setCode] = useState('');
  const [disableState, disable] = useMutation(TwoFactorDisable);
  const [codesState, newCodes] = useMutation(TwoFactorNewCodes);
  const error = disableState.error ?? codesState.error;
  const errors = fieldErrors(error);

  const turnOff = async () => {
    const result = await disable({ input: { code } });
    if (!result.error) {
      setCode('');
      onDisabled();
    }
  };
  const renew = async () => {
    const result = await newCodes({ input: { code } });
    const codes = result.data?.regenerateRecoveryCodes.recoveryCodes;
    if (codes) {
      setCode('');
      onNewCodes(codes);
    }
  };
  return (
    <Stack component="form" onSubmit={(e: FormEvent) => e.preventDefault()} aria-label="Manage two-factor authentication">
      <Text size="sm" role="status">
        Two-factor authentication is on{status.enabledAt ? ` since ${formatDateTime(status.enabledAt)}` : ''}. {status.recoveryCodesRemaining} of 10 recovery codes left.
      </Text>
      {status.requiredByOrganization && (
        <Text size="sm" c="dimmed">
          Your organization requires two-factor authentication, so it can not be turned off.
        </Text>
      )}
      <List size="sm">
        <List.Item>New recovery codes replace the ones you have.</List.Item>
        <List.Item>Both actions need a current code from your app, or one of your recovery codes.</List.Item>
      </List>
      {!Object.keys(errors).length && <ErrorAlert error={error} />}
      <TextInput
        label="Authentication code"
        description="From your authenticator app, or a recovery code."
        autoComplete="one-time-code"
        maw={320}
        value={code}
        onChange={(e) => setCode(e.currentTarget.value)}
        error={errors.code}
      />
      <Group>
        <Button variant="default" onClick={() => void renew()} loading={codesState.fetching} disabled={!code.trim()}>
          Get new recovery codes
        </Button>
        {!status.requiredByOrganization && (
          <Button color="red" variant="light" onClick={() => void turnOff()} loading={disableState.fetching} disabled={!code.trim()}>
            Turn off two-factor authentication
          </Button>
        )}
      </Group>
    </Stack>
  );
}
