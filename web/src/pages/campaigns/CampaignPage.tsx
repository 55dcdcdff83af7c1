import { PageHeader } from '../../components/PageHeader';

export default function CampaignPage() {
  return <PageHeader title="CampaignPage" />;
}
