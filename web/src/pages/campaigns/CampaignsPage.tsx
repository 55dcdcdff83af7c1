import { PageHeader } from '../../components/PageHeader';

export default function CampaignsPage() {
  return <PageHeader title="CampaignsPage" />;
}
