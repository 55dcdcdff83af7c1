import { PageHeader } from '../../components/PageHeader';

export default function TemplatesPage() {
  return <PageHeader title="TemplatesPage" />;
}
