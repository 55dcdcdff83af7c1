import { Anchor, Text } from '@mantine/core';
import { Link } from 'react-router';
import { PageHeader } from '../components/PageHeader';

export default function NotFoundPage() {
  return (
    <>
      <PageHeader title="Page not found" />
      <Text>
        There is no page at this address.{' '}
        <Anchor component={Link} to="/">
          Go to the dashboard
        </Anchor>
      </Text>
    </>
  );
}
