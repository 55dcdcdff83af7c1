import { Button, Stack } from '@mantine/core';
import { Link } from 'react-router';
import { PageHeader } from '../../components/PageHeader';
import { ImportForm } from './ImportForm';
import { ImportsList } from './ImportsList';

/** Contacts from a CSV file: a new import, and the imports before it. Admins only (the route says so). */
export default function ImportPage() {
  return (
    <>
      <PageHeader title="Import contacts">
        <Button variant="default" component={Link} to="/contacts">
          Back to contacts
        </Button>
      </PageHeader>
      <Stack gap="xl">
        <ImportForm />
        <ImportsList />
      </Stack>
    </>
  );
}
