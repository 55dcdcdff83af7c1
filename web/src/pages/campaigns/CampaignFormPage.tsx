import { PageHeader } from '../../components/PageHeader';

export default function CampaignFormPage() {
  return <PageHeader title="CampaignFormPage" />;
}
