import { Anchor, Button, Container, Grid, Paper, PasswordInput, Stack, Text, TextInput, Title } from '@mantine/core';
import { useState, type FormEvent } from 'react';
import { Link, Navigate } from 'react-router';
import { useMutation } from 'urql';
import { ErrorAlert } from '../../components/ErrorAlert';
import { graphql } from '../../gql';
import { fieldErrors } from '../../lib/errors';
import { setToken, useToken } from '../../lib/session';

const SignupMutation = graphql(`
  mutation Signup($input: SignupInput!) {
    signup(input: $input) {
      token
    }
  }
`);

const FIELDS = [
  { name: 'firstName', label: 'First name', autoComplete: 'given-name' },
  { name: 'lastName', label: 'Last name', autoComplete: 'family-name' },
  { name: 'email', label: 'Email', autoComplete: 'email', type: 'email' },
  { name: 'companyName', label: 'Organization name', autoComplete: 'organization' },
  { name: 'sector', label: 'Sector' },
  { name: 'country', label: 'Country', autoComplete: 'country-name' },
  { name: 'countryCode', label: 'Phone country code', placeholder: '+254' },
  { name: 'phoneNumber', label: 'Phone number', autoComplete: 'tel-national' },
] as const;

type Form = Record<(typeof FIELDS)[number]['name'] | 'password', string>;

export default function SignupPage() {
  const token = useToken();
  const [form, setForm] = useState<Form>({ firstName: '', lastName: '', email: '', companyName: '', sector: '', country: '', countryCode: '', phoneNumber: '', password: '' });
  const [{ fetching, error }, signup] = useMutation(SignupMutation);
  if (token) return <Navigate to="/" replace />;

  const set = (name: keyof Form) => (e: { currentTarget: { value: string } }) => {
    const value = e.currentTarget.value;
    setForm((f) => ({ ...f, [name]: value }));
  };
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const result = await signup({ input: form });
    if (result.data) setToken(result.data.signup.token);
  };
  const errors = fieldErrors(error);
  return (
    <Container component="main" size={640} py="xl">
      <Title order={1} ta="center" mb="md">
        Create your Herald organization
      </Title>
      <Paper withBorder p="lg" radius="md" component="form" onSubmit={submit}>
        <Stack>
          <ErrorAlert error={error} title="Could not sign up" />
          <Grid>
            {FIELDS.map((f) => (
              <Grid.Col key={f.name} span={{ base: 12, sm: 6 }}>
                <TextInput
                  label={f.label}
                  required
                  type={'type' in f ? f.type : 'text'}
                  autoComplete={'autoComplete' in f ? f.autoComplete : undefined}
                  placeholder={'placeholder' in f ? f.placeholder : undefined}
                  value={form[f.name]}
                  onChange={set(f.name)}
                  error={errors[f.name]}
                />
              </Grid.Col>
            ))}
            <Grid.Col span={12}>
              <PasswordInput label="Password" description="At least 8 characters" autoComplete="new-password" required value={form.password} onChange={set('password')} error={errors.password} />
            </Grid.Col>
          </Grid>
          <Button type="submit" loading={fetching}>
            Create organization
          </Button>
          <Text size="sm" ta="center">
            Already on Herald?{' '}
            <Anchor component={Link} to="/login">
              Log in
            </Anchor>
          </Text>
        </Stack>
      </Paper>
    </Container>
  );
}
