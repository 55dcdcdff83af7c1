import { PageHeader } from '../../components/PageHeader';

export default function DashboardPage() {
  return <PageHeader title="DashboardPage" />;
}
