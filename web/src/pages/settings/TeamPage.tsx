import { PageHeader } from '../../components/PageHeader';

export default function TeamPage() {
  return <PageHeader title="TeamPage" />;
}
