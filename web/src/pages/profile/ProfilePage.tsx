import { PageHeader } from '../../components/PageHeader';

export default function ProfilePage() {
  return <PageHeader title="ProfilePage" />;
}
