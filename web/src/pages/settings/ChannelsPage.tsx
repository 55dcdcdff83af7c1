import { PageHeader } from '../../components/PageHeader';

export default function ChannelsPage() {
  return <PageHeader title="ChannelsPage" />;
}
