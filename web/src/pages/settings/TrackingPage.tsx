import { PageHeader } from '../../components/PageHeader';

export default function TrackingPage() {
  return <PageHeader title="TrackingPage" />;
}
