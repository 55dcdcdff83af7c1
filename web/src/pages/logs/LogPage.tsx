import { PageHeader } from '../../components/PageHeader';

export default function LogPage() {
  return <PageHeader title="LogPage" />;
}
