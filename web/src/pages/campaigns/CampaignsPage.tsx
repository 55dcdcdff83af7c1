import { Button, Table, Text } from '@mantine/core';
import { Link } from 'react-router';
import { useQuery } from 'urql';
import { CursorPager } from '../../components/CursorPager';
import { EmptyState } from '../../components/EmptyState';
import { ErrorAlert } from '../../components/ErrorAlert';
import { PageHeader } from '../../components/PageHeader';
import { PageLoader } from '../../components/PageLoader';
import { graphql } from '../../gql';
import type { CampaignsListQuery } from '../../gql/graphql';
import { formatDateTime, formatNumber } from '../../lib/format';
import { useMe } from '../../lib/me';
import { useCursorPages } from '../../lib/use-cursor-pages';
import { StatusBadge, TYPE_LABELS, channelList } from './campaign-fields';

const PAGE_SIZE = 25;

const CampaignsList = graphql(`
  query CampaignsList($first: Int, $after: String) {
    campaigns(first: $first, after: $after) {
      totalCount
      pageInfo {
        hasNextPage
        endCursor
      }
      edges {
        node {
          _id
          name
          type
          channels
          status
          scheduleDate
          createdAt
          analytics {
            sent
            delivered
            opened
            clicked
          }
        }
      }
    }
  }
`);

type ListedAnalytics = CampaignsListQuery['campaigns']['edges'][number]['node']['analytics'];

/** The analytics the list shows, each in its column: how far each campaign got at a glance. */
const COUNTS = [
  ['sent', 'Sent'],
  ['delivered', 'Delivered'],
  ['opened', 'Opened'],
  ['clicked', 'Clicked'],
] as const satisfies readonly (readonly [keyof ListedAnalytics, string])[];

/** The organization's campaigns, newest first, a page at a time. */
export default function CampaignsPage() {
  const { isAdmin } = useMe();
  const pages = useCursorPages();
  const [{ data, fetching, error }] = useQuery({ query: CampaignsList, variables: { first: PAGE_SIZE, after: pages.after } });
  const campaigns = data?.campaigns;
  const newCampaign = isAdmin && (
    <Button component={Link} to="/campaigns/new">
      New campaign
    </Button>
  );

  return (
    <>
      <PageHeader title="Campaigns">{newCampaign}</PageHeader>
      <ErrorAlert error={error} />
      {!campaigns && fetching && <PageLoader />}
      {campaigns && campaigns.edges.length === 0 && (
        <EmptyState title="No campaigns yet">
          <Text c="dimmed">
            {isAdmin
              ? 'A campaign sends one message to your contacts or groups, now or at a time you choose. Create one to start.'
              : 'A campaign sends one message to your contacts or groups. Ask an admin of your organization to create one.'}
          </Text>
          {newCampaign}
        </EmptyState>
      )}
      {campaigns && campaigns.edges.length > 0 && (
        <>
          <Table striped highlightOnHover>
            <Table.Thead>
              <Table.Tr>
                <Table.Th>Name</Table.Th>
                <Table.Th>Status</Table.Th>
                <Table.Th>Type</Table.Th>
                <Table.Th>Channels</Table.Th>
                <Table.Th>Created</Table.Th>
                <Table.Th>Scheduled for</Table.Th>
                {COUNTS.map(([, label]) => (
                  <Table.Th key={label} ta="right">
                    {label}
                  </Table.Th>
                ))}
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {campaigns.edges.map(({ node }) => (
                <Table.Tr key={node._id}>
                  <Table.Td>
                    <Link to={`/campaigns/${node._id}`}>{node.name}</Link>
                  </Table.Td>
                  <Table.Td>
                    <StatusBadge status={node.status} />
                  </Table.Td>
                  <Table.Td>{TYPE_LABELS[node.type]}</Table.Td>
                  <Table.Td>{channelList(node.channels)}</Table.Td>
                  <Table.Td>{formatDateTime(node.createdAt)}</Table.Td>
                  <Table.Td>{node.scheduleDate ? formatDateTime(node.scheduleDate) : 'When launched'}</Table.Td>
                  {COUNTS.map(([field, label]) => (
                    <Table.Td key={label} ta="right">
                      {formatNumber(node.analytics[field])}
                    </Table.Td>
                  ))}
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
          <CursorPager
            history={pages.history}
            hasNextPage={campaigns.pageInfo.hasNextPage}
            totalCount={campaigns.totalCount}
            onPrevious={pages.previous}
            onNext={() => pages.next(campaigns.pageInfo.endCursor)}
          />
        </>
      )}
    </>
  );
}
