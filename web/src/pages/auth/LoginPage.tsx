import { Anchor, Button, Container, Paper, PasswordInput, Stack, Text, TextInput, Title } from '@mantine/core';
import { useState, type FormEvent } from 'react';
import { Link, Navigate, useLocation } from 'react-router';
import { useMutation } from 'urql';
import { ErrorAlert } from '../../components/ErrorAlert';
import { graphql } from '../../gql';
import { fieldErrors } from '../../lib/errors';
import { setToken, useToken } from '../../lib/session';

const LoginMutation = graphql(`
  mutation Login($input: LoginInput!) {
    login(input: $input) {
      token
      mfaRequired
      mfaToken
    }
  }
`);

const LoginWithTwoFactorMutation = graphql(`
  mutation LoginWithTwoFactor($input: TwoFactorLoginInput!) {
    loginWithTwoFactor(input: $input) {
      token
    }
  }
`);

/**
 * Email and password; for a user with two-factor authentication, a second step asks for the code of
 * their app (or a recovery code). A user whose organization requires two-factor authentication and
 * who has not set it up is signed in and taken to their profile to do so (`TwoFactorGate`).
 */
export default function LoginPage() {
  const token = useToken();
  const location = useLocation();
  const [mfaToken, setMfaToken] = useState<string | null>(null);
  if (token) return <Navigate to={(location.state as { from?: string } | null)?.from ?? '/'} replace />;
  return (
    <Container component="main" size={420} py="xl">
      <Title order={1} ta="center" mb="md">
        Log in to Herald
      </Title>
      {mfaToken ? <CodeStep mfaToken={mfaToken} onRestart={() => setMfaToken(null)} /> : <PasswordStep onCodeNeeded={setMfaToken} />}
    </Container>
  );
}

function PasswordStep({ onCodeNeeded }: { onCodeNeeded: (mfaToken: string) => void }) {
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [{ fetching, error }, login] = useMutation(LoginMutation);

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const result = await login({ input: { email, password } });
    const answer = result.data?.login;
    if (answer?.mfaRequired && answer.mfaToken) onCodeNeeded(answer.mfaToken);
    else if (answer?.token) setToken(answer.token);
  };
  const errors = fieldErrors(error);
  return (
    <Paper withBorder p="lg" radius="md" component="form" onSubmit={submit}>
      <Stack>
        <ErrorAlert error={error} title="Could not log in" />
        <TextInput label="Email" type="email" autoComplete="email" required value={email} onChange={(e) => setEmail(e.currentTarget.value)} error={errors.email} />
        <PasswordInput label="Password" autoComplete="current-password" required value={password} onChange={(e) => setPassword(e.currentTarget.value)} error={errors.password} />
        <Button type="submit" loading={fetching}>
          Log in
        </Button>
        <Text size="sm" ta="center">
          New to Herald?{' '}
          <Anchor component={Link} to="/signup">
            Create an organization
          </Anchor>
        </Text>
      </Stack>
    </Paper>
  );
}

/** The second step: a code of the authenticator app or a recovery code, within the 5 minutes of the mfaToken. */
function CodeStep({ mfaToken, onRestart }: { mfaToken: string; onRestart: () => void }) {
  const [code, setCode] = useState('');
  const [{ fetching, error }, verify] = useMutation(LoginWithTwoFactorMutation);

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const result = await verify({ input: { mfaToken, code: code.trim() } });
    const token = result.data?.loginWithTwoFactor.token;
    if (token) setToken(token);
  };
  const errors = fieldErrors(error);
  return (
    <Paper withBorder p="lg" radius="md" component="form" onSubmit={submit} aria-label="Two-factor authentication">
      <Stack>
        <Text size="sm">Enter the code your authenticator app shows for Herald. Lost your phone? Enter one of your recovery codes instead.</Text>
        <ErrorAlert error={error} title="Could not log in" />
        <TextInput
          label="Authentication code"
          autoComplete="one-time-code"
          required
          autoFocus
          value={code}
          onChange={(e) => setCode(e.currentTarget.value)}
          error={errors.code}
        />
        <Button type="submit" loading={fetching}>
          Verify
        </Button>
        <Button variant="subtle" onClick={onRestart}>
          Back to email and password
        </Button>
      </Stack>
    </Paper>
  );
}
