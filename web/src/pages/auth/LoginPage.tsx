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
    }
  }
`);

export default function LoginPage() {
  const token = useToken();
  const location = useLocation();
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [{ fetching, error }, login] = useMutation(LoginMutation);
  if (token) return <Navigate to={(location.state as { from?: string } | null)?.from ?? '/'} replace />;

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const result = await login({ input: { email, password } });
    if (result.data) setToken(result.data.login.token);
  };
  const errors = fieldErrors(error);
  return (
    <Container size={420} py="xl">
      <Title order={1} ta="center" mb="md">
        Log in to Herald
      </Title>
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
    </Container>
  );
}
