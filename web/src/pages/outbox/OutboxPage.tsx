import { PageHeader } from '../../components/PageHeader';

export default function OutboxPage() {
  return <PageHeader title="OutboxPage" />;
}
