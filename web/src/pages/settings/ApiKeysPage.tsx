import { PageHeader } from '../../components/PageHeader';

export default function ApiKeysPage() {
  return <PageHeader title="ApiKeysPage" />;
}
