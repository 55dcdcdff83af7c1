import { PageHeader } from '../../components/PageHeader';

export default function SendPage() {
  return <PageHeader title="SendPage" />;
}
