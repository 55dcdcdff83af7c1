import { PageHeader } from '../../components/PageHeader';

export default function ContactsPage() {
  return <PageHeader title="ContactsPage" />;
}
