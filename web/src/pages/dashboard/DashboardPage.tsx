import { Anchor, Badge, Button, Group, Paper, SimpleGrid, Stack, Table, Text, Title } from '@mantine/core';
import { useState } from 'react';
import { Link } from 'react-router';
import { useQuery } from 'urql';
import { EmptyState } from '../../components/EmptyState';
import { ErrorAlert } from '../../components/ErrorAlert';
import { PageHeader } from '../../components/PageHeader';
import { PageLoader } from '../../components/PageLoader';
import { graphql } from '../../gql';
import type { CampaignStatus, Channel, DashboardQuery, LogRecipientStatus } from '../../gql/graphql';
import { formatDateTime, formatNumber } from '../../lib/format';
import { useMe } from '../../lib/me';
import { CHANNELS, CHANNEL_LABELS, STATUSES, STATUS_LABELS } from '../logs/log-fields';
import { DashboardActivity } from './DashboardActivity';

const RECENT_CAMPAIGNS = 5;

const DashboardQueryDocument = graphql(`
  query Dashboard($since: String!, $campaigns: Int!) {
    messageStats(since: $since) {
      since
      total
      byChannel {
        channel
        status
        count
      }
    }
    campaigns(first: $campaigns) {
      totalCount
      edges {
        node {
          _id
          name
          status
          channels
          createdAt
        }
      }
    }
  }
`);

type Stats = DashboardQuery['messageStats'];

/** Midnight of today in the browser's time zone, as ISO 8601: "today" is the user's own day. */
function startOfToday(): string {
  const d = new Date();
  d.setHours(0, 0, 0, 0);
  return d.toISOString();
}

/** The organization at a glance: its credits, today's sends by channel and status, its sends over time, its newest campaigns. */
export default function DashboardPage() {
  const { me } = useMe();
  // Fixed for the page's life, so the query is not asked again on every render.
  const [since] = useState(startOfToday);
  const [{ data, fetching, error }] = useQuery({ query: DashboardQueryDocument, variables: { since, campaigns: RECENT_CAMPAIGNS } });
  const stats = data?.messageStats;
  const count = (status: LogRecipientStatus, channel?: Channel) =>
    (stats?.byChannel ?? []).filter((c) => c.status === status && (!channel || c.channel === channel)).reduce((n, c) => n + c.count, 0);

  return (
    <>
      <PageHeader title="Dashboard">
        <Button component={Link} to="/send">
          Send a message
        </Button>
      </PageHeader>
      <ErrorAlert error={error} />
      <SimpleGrid cols={{ base: 1, xs: 2, md: 4 }} mb="lg">
        <Tile label="Credits" value={me ? formatNumber(me.organization.credits) : '—'} note="Left to spend on sends" />
        <Tile label="Sent today" value={stats ? formatNumber(count('success')) : '—'} note="Recipients charged" />
        <Tile label="Failed today" value={stats ? formatNumber(count('failed')) : '—'} note="Not charged" />
        <Tile label="Pending" value={stats ? formatNumber(count('pending')) : '—'} note="Sends still running" />
      </SimpleGrid>
      {!data && fetching && <PageLoader />}
      {data && (
        <Stack gap="lg">
          <TodayByChannel stats={data.messageStats} count={count} />
          <DashboardActivity />
          <RecentCampaigns campaigns={data.campaigns.edges.map((e) => e.node)} total={data.campaigns.totalCount} />
        </Stack>
      )}
    </>
  );
}

function Tile({ label, value, note }: { label: string; value: string; note: string }) {
  return (
    <Paper withBorder p="md" radius="md">
      <Text size="sm" fw={600}>
        {label}
      </Text>
      <Text fz={28} fw={700}>
        {value}
      </Text>
      <Text size="xs" c="dimmed">
        {note}
      </Text>
    </Paper>
  );
}

/** Today's recipients: a row per channel, a column per status, each count a link to those logs. */
function TodayByChannel({ stats, count }: { stats: Stats; count: (status: LogRecipientStatus, channel?: Channel) => number }) {
  const from = new Date(stats.since);
  // The logs page filters by whole days: today's date in the user's calendar.
  const today = `${from.getFullYear()}-${String(from.getMonth() + 1).padStart(2, '0')}-${String(from.getDate()).padStart(2, '0')}`;
  return (
    <section aria-labelledby="dashboard-today">
      <Title order={3} size="h4" mb="xs" id="dashboard-today">
        Sends today by channel and status
      </Title>
      {stats.total === 0 ? (
        <EmptyState title="Nothing sent today">
          <Text c="dimmed">Messages you send today, on their own or in campaigns, are counted here by channel and outcome.</Text>
        </EmptyState>
      ) : (
        <Table striped>
          <Table.Thead>
            <Table.Tr>
              <Table.Th>Channel</Table.Th>
              {STATUSES.map((s) => (
                <Table.Th key={s} ta="right">
                  {STATUS_LABELS[s]}
                </Table.Th>
              ))}
              <Table.Th ta="right">Total</Table.Th>
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {CHANNELS.map((channel) => (
              <Table.Tr key={channel}>
                <Table.Th scope="row" fw={400}>
                  <Anchor size="sm" component={Link} to={`/message-logs?channel=${channel}&from=${today}`}>
                    {CHANNEL_LABELS[channel]}
                  </Anchor>
                </Table.Th>
                {STATUSES.map((s) => (
                  <Table.Td key={s} ta="right">
                    {formatNumber(count(s, channel))}
                  </Table.Td>
                ))}
                <Table.Td ta="right" fw={600}>
                  {formatNumber(STATUSES.reduce((n, s) => n + count(s, channel), 0))}
                </Table.Td>
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
      )}
    </section>
  );
}

/** Dark enough for white badge text to pass AA. */
const CAMPAIGN_STATUS_COLORS: Record<CampaignStatus, string> = { draft: 'gray.8', scheduled: 'blue.9', active: '#0b6651', completed: '#1b6e31', canceled: '#b02525' };

type CampaignRow = DashboardQuery['campaigns']['edges'][number]['node'];

function RecentCampaigns({ campaigns, total }: { campaigns: CampaignRow[]; total: number }) {
  const { isAdmin } = useMe();
  return (
    <section aria-labelledby="dashboard-campaigns">
      <Group justify="space-between" mb="xs">
        <Title order={3} size="h4" id="dashboard-campaigns">
          Recent campaigns
        </Title>
        {total > campaigns.length && (
          <Anchor component={Link} to="/campaigns">
            All {formatNumber(total)} campaigns
          </Anchor>
        )}
      </Group>
      {campaigns.length === 0 ? (
        <EmptyState title="No campaigns yet">
          <Text c="dimmed">
            {isAdmin ? 'A campaign sends one message to your contacts or groups. Create one to start.' : 'A campaign sends one message to your contacts or groups. Ask an admin to create one.'}
          </Text>
          {isAdmin && (
            <Button component={Link} to="/campaigns/new">
              New campaign
            </Button>
          )}
        </EmptyState>
      ) : (
        <Table striped highlightOnHover>
          <Table.Thead>
            <Table.Tr>
              <Table.Th>Name</Table.Th>
              <Table.Th>Status</Table.Th>
              <Table.Th>Channels</Table.Th>
              <Table.Th>Created</Table.Th>
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {campaigns.map((c) => (
              <Table.Tr key={c._id}>
                <Table.Td>
                  <Anchor size="sm" component={Link} to={`/campaigns/${c._id}`}>
                    {c.name}
                  </Anchor>
                </Table.Td>
                <Table.Td>
                  <Badge color={CAMPAIGN_STATUS_COLORS[c.status]} variant="filled">
                    {c.status}
                  </Badge>
                </Table.Td>
                <Table.Td>{c.channels.map((ch) => CHANNEL_LABELS[ch]).join(', ')}</Table.Td>
                <Table.Td>{formatDateTime(c.createdAt)}</Table.Td>
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
      )}
    </section>
  );
}
