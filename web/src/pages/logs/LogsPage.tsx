import { PageHeader } from '../../components/PageHeader';

export default function LogsPage() {
  return <PageHeader title="LogsPage" />;
}
