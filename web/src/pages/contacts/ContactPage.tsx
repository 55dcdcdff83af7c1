import { Anchor, Badge, Button, Group, Paper, SimpleGrid, Stack, Table, Text, Title } from '@mantine/core';
import { useState, type ReactNode } from 'react';
import { Link, useNavigate, useParams } from 'react-router';
import { useMutation, useQuery } from 'urql';
import { ErrorAlert } from '../../components/ErrorAlert';
import { PageHeader } from '../../components/PageHeader';
import { PageLoader } from '../../components/PageLoader';
import { graphql } from '../../gql';
import type { ContactFieldsFragment } from '../../gql/graphql';
import { formatDateTime } from '../../lib/format';
import { useMe } from '../../lib/me';
import { ContactAttributes } from './ContactAttributes';
import { ContactConsent } from './ContactConsent';
import { ContactForm } from './ContactForm';
import { ContactGroups } from './ContactGroups';
import { ContactMessages } from './ContactMessages';
import { DeleteContact } from './documents';
import { EraseContact } from './EraseContact';
import { PersonDataButton } from './PersonDataButton';

const ContactQueryDocument = graphql(`
  query Contact($id: ID!) {
    contact(id: $id) {
      ...ContactFields
    }
  }
`);

/** One contact: its addresses and details, groups, attributes, consent and the messages sent to it; admins edit or delete it. */
export default function ContactPage() {
  const { id = '' } = useParams();
  const { isAdmin } = useMe();
  const navigate = useNavigate();
  const [{ data, fetching, error }] = useQuery({ query: ContactQueryDocument, variables: { id } });
  const [deleteState, deleteContact] = useMutation(DeleteContact);
  const [editing, setEditing] = useState(false);
  const contact = data?.contact;

  const remove = async (c: ContactFieldsFragment) => {
    if (!confirm(`Delete the contact "${c.name}" for good?`)) return;
    const result = await deleteContact({ id: c._id });
    if (!result.error) navigate('/contacts', { replace: true });
  };

  return (
    <>
      <Anchor component={Link} to="/contacts" size="sm">
        ← All contacts
      </Anchor>
      {!contact && fetching && <PageLoader />}
      {!contact && !fetching && (
        <>
          <PageHeader title="Contact" />
          <ErrorAlert error={error} title="This contact cannot be shown" />
        </>
      )}
      {contact && (
        <>
          <PageHeader title={contact.name}>
            {isAdmin && (
              <>
                <Button variant="default" onClick={() => setEditing(true)}>
                  Edit contact
                </Button>
                <PersonDataButton contactId={contact._id} name={contact.name} />
                <Button color="red.9" variant="outline" loading={deleteState.fetching} onClick={() => void remove(contact)}>
                  Delete contact
                </Button>
                <EraseContact contactId={contact._id} name={contact.name} />
              </>
            )}
          </PageHeader>
          <ErrorAlert error={deleteState.error} />
          <SimpleGrid cols={{ base: 1, md: 2 }}>
            <Stack>
              <ContactDetails contact={contact} />
              <ContactGroups contact={contact} isAdmin={isAdmin} />
            </Stack>
            <Stack>
              <ContactConsent contact={contact} isAdmin={isAdmin} />
              <ContactAttributes contact={contact} isAdmin={isAdmin} />
            </Stack>
          </SimpleGrid>
          <ContactMessages contact={contact} />
          {editing && <ContactForm contact={contact} onClose={() => setEditing(false)} />}
        </>
      )}
    </>
  );
}

/** Addresses, company, tags and dates, as a two-column table with row headers. */
function ContactDetails({ contact }: { contact: ContactFieldsFragment }) {
  const rows: [string, ReactNode][] = [
    ['Email', contact.email ?? '—'],
    ['Phone', contact.phone ?? '—'],
    ['Country code', contact.countryCode ?? '—'],
    ['Company', contact.organization ?? '—'],
    ['Time zone', contact.timezone ?? 'The organization’s'],
    [
      'Tags',
      contact.tags.length ? (
        <Group gap={4}>
          {contact.tags.map((t) => (
            <Badge key={t} variant="outline" color="dark" tt="none">
              {t}
            </Badge>
          ))}
        </Group>
      ) : (
        '—'
      ),
    ],
    ['Created', formatDateTime(contact.createdAt)],
    ['Last changed', formatDateTime(contact.updatedAt)],
  ];
  return (
    <Paper withBorder p="md" radius="md">
      <Stack gap="sm">
        <Title order={3} size="h4">
          Details
        </Title>
        <Table variant="vertical" withTableBorder={false}>
          <Table.Tbody>
            {rows.map(([label, value]) => (
              <Table.Tr key={label}>
                <Table.Th w={140} scope="row">
                  {label}
                </Table.Th>
                <Table.Td>{typeof value === 'string' ? <Text size="sm">{value}</Text> : value}</Table.Td>
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
      </Stack>
    </Paper>
  );
}
