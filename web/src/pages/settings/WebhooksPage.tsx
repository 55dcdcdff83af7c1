import { PageHeader } from '../../components/PageHeader';

export default function WebhooksPage() {
  return <PageHeader title="WebhooksPage" />;
}
