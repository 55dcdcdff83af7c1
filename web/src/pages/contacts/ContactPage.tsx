import { PageHeader } from '../../components/PageHeader';

export default function ContactPage() {
  return <PageHeader title="ContactPage" />;
}
