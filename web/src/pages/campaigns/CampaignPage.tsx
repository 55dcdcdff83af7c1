import { Anchor, Button, Card, Grid, Group, Paper, Stack, Text, Title } from '@mantine/core';
import { useEffect } from 'react';
import { Link, useParams } from 'react-router';
import { useClient, useQuery, useSubscription } from 'urql';
import { ErrorAlert } from '../../components/ErrorAlert';
import { FieldTable, type Field } from '../../components/FieldTable';
import { PageHeader } from '../../components/PageHeader';
import { PageLoader } from '../../components/PageLoader';
import { hoursInWords } from '../../components/SendingHoursFields';
import { graphql } from '../../gql';
import type { CampaignFieldsFragment, Channel } from '../../gql/graphql';
import { formatDateTime, formatNumber } from '../../lib/format';
import { useMe } from '../../lib/me';
import { CampaignActions } from './CampaignActions';
import { CampaignAnalyticsCard, type Held } from './CampaignAnalyticsCard';
import { CampaignFunnelCard } from './CampaignFunnelCard';
import { CampaignEstimateCard } from './CampaignEstimateCard';
import { ThrottledBadge, type Pace } from './CampaignPace';
import { CampaignPreviewCard } from './CampaignPreviewCard';
import { CampaignRunsCard, PendingSendsCard } from './CampaignRunsCard';
import { CampaignScheduleCard } from './CampaignScheduleCard';
import { TestSendCard } from './TestSendCard';
import { CHANNEL_LABELS, StatusBadge, TYPE_LABELS, channelList, plural } from './campaign-fields';
import { formatWallClock } from './schedule-words';

const CampaignDetail = graphql(`
  query CampaignPageDetail($id: ID!) {
    campaign(id: $id) {
      ...CampaignFields
    }
  }
`);

/** The groups' names, for the audience (a query of its own: lists are refetched after every mutation). */
const CampaignGroupNames = graphql(`
  query CampaignPageGroupNames {
    groups(first: 1000) {
      edges {
        node {
          _id
          name
        }
      }
    }
  }
`);

/** The campaign's status and counters as they change, pushed by the server (graphql-ws). */
const CampaignProgressDocument = graphql(`
  subscription CampaignPageProgress($id: ID!) {
    campaignProgress(id: $id) {
      _id
      status
      updatedAt
      analytics {
        sent
        delivered
        failed
        opened
        clicked
        bounced
        complained
        suppressed
        capped
      }
      throttled
      sendRate
      estimatedCompletionAt
    }
  }
`);

/**
 * The recipients held for their sending hours or local send time, read again with each progress
 * event (which does not carry them): the answer updates the cached campaign's progress.
 */
const CampaignHeldDocument = graphql(`
  query CampaignPageHeld($id: ID!) {
    campaign(id: $id) {
      _id
      progress {
        waiting
        nextOpeningAt
      }
    }
  }
`);

/**
 * One campaign: what it sends to whom, and by status what can be done with it. Before launch: its
 * preview, a test send and the estimate. Once launched: analytics, updated live while it is
 * scheduled or sending by the `campaignProgress` subscription (no polling), and while it sends its
 * pace, estimated finish and whether a channel's rate holds it back (Throttled).
 */
export default function CampaignPage() {
  const { id = '' } = useParams();
  const { isAdmin } = useMe();
  const [{ data, fetching, error }, refetch] = useQuery({ query: CampaignDetail, variables: { id } });
  const [{ data: groupData }] = useQuery({ query: CampaignGroupNames });
  const campaign = data?.campaign;

  // The subscription runs while the campaign can still change by itself; it completes with the last status.
  const waiting = campaign?.status === 'scheduled' || campaign?.status === 'active';
  const [{ data: liveData }] = useSubscription({ query: CampaignProgressDocument, variables: { id }, pause: !waiting });
  const event = liveData?.campaignProgress;
  const fresh = event && campaign && event._id === campaign._id && event.updatedAt >= campaign.updatedAt ? event : null;
  const status = fresh?.status ?? campaign?.status;
  // A recurring or automated campaign's counters also move with its runs, read again by the Runs
  // card: of an event and a read at one `updatedAt`, each counter's larger value is the newer.
  const analytics = fresh && campaign && fresh.updatedAt === campaign.updatedAt ? largest(fresh.analytics, campaign.analytics) : (fresh?.analytics ?? campaign?.analytics);

  // A new status brings fields the event does not carry (the audience fixed at start, the final
  // counters): read the campaign once more, on the change itself, never on a timer.
  const statusChanged = !!fresh && !!campaign && fresh.status !== campaign.status;
  useEffect(() => {
    if (statusChanged) refetch({ requestPolicy: 'network-only' });
  }, [statusChanged, fresh?.status, refetch]);

  const stamp = fresh ? `${fresh.updatedAt}/${fresh.analytics.sent}/${fresh.analytics.failed}` : undefined;
  // Held recipients are sent as they come due, which moves the counters: each event, they are counted again.
  const client = useClient();
  useEffect(() => {
    if (stamp && status === 'active') void client.query(CampaignHeldDocument, { id }, { requestPolicy: 'network-only' }).toPromise();
  }, [stamp, status, client, id]);

  if (error && !campaign) return <ErrorAlert error={error} />;
  if (!campaign || !status || !analytics) return fetching ? <PageLoader /> : null;
  const groupNames = new Map((groupData?.groups.edges ?? []).map((e) => [e.node._id, e.node.name]));
  const beforeLaunch = status === 'draft' || status === 'scheduled';
  // Recurring and automated campaigns send in runs, long after the launch.
  const inRuns = campaign.type === 'recurring' || campaign.type === 'automated';
  // How it is being sent, while it is: the event's when there is one. A recurring or automated
  // campaign sends in runs, each with a pace of its own: its own row shows one only if it reports one.
  const sending: Pace | null = status === 'active' ? (fresh ?? campaign) : null;
  const pace = sending && (!inRuns || sending.throttled || sending.sendRate != null || sending.estimatedCompletionAt != null) ? sending : null;
  const held: Held | null = status === 'active' ? { waiting: campaign.progress.waiting, nextOpeningAt: campaign.progress.nextOpeningAt, localTime: !!campaign.localSendAt } : null;

  return (
    <>
      <PageHeader title={campaign.name}>
        <Button variant="default" component={Link} to={`/message-logs?campaign=${campaign._id}`}>
          Campaign message logs
        </Button>
        {isAdmin && <CampaignActions campaign={{ ...campaign, status }} />}
      </PageHeader>
      <Group gap="xs" mb="md" role="status" aria-label="Campaign status">
        <Text>Status:</Text>
        <StatusBadge status={status} />
        {pace?.throttled && <ThrottledBadge />}
        {status === 'scheduled' && campaign.scheduleDate && <Text>starts on {formatDateTime(campaign.scheduleDate)}</Text>}
      </Group>
      <Grid>
        <Grid.Col span={{ base: 12, md: 5 }}>
          <Stack>
            <Overview campaign={campaign} groupNames={groupNames} />
            <CampaignScheduleCard campaign={campaign} status={status} groupNames={groupNames} />
            <Messages campaign={campaign} />
          </Stack>
        </Grid.Col>
        <Grid.Col span={{ base: 12, md: 7 }}>
          <Stack>
            {status !== 'draft' && (
              <CampaignAnalyticsCard
                status={status}
                channels={campaign.channels}
                analytics={analytics}
                total={campaign.progress.total}
                live={waiting}
                pace={pace}
                held={held}
                heldToCaps={campaign.type !== 'automated' && !campaign.exemptFromCaps}
              />
            )}
            {status !== 'draft' && <CampaignFunnelCard campaignId={campaign._id} stamp={stamp} />}
            {beforeLaunch && <CampaignPreviewCard campaignId={campaign._id} />}
            {/* An automated campaign's audience is not known before its triggers happen: nothing to estimate. */}
            {beforeLaunch && campaign.type !== 'automated' && <CampaignEstimateCard campaignId={campaign._id} />}
            {beforeLaunch && isAdmin && <TestSendCard campaignId={campaign._id} />}
          </Stack>
        </Grid.Col>
        {inRuns && status !== 'draft' && (
          <Grid.Col span={12}>
            <Stack>
              <CampaignRunsCard campaignId={campaign._id} type={campaign.type} live={waiting} stamp={stamp} />
              {campaign.type === 'automated' && <PendingSendsCard campaignId={campaign._id} live={waiting} stamp={stamp} />}
            </Stack>
          </Grid.Col>
        )}
      </Grid>
    </>
  );
}

type Counters = CampaignFieldsFragment['analytics'];

/** Each counter's larger value (counters never go down). */
const largest = (a: Counters, b: Counters): Counters => ({
  sent: Math.max(a.sent, b.sent),
  delivered: Math.max(a.delivered, b.delivered),
  failed: Math.max(a.failed, b.failed),
  opened: Math.max(a.opened, b.opened),
  clicked: Math.max(a.clicked, b.clicked),
  bounced: Math.max(a.bounced, b.bounced),
  complained: Math.max(a.complained, b.complained),
  suppressed: Math.max(a.suppressed, b.suppressed),
  capped: Math.max(a.capped, b.capped),
});

/** What the campaign is and whom it goes to. */
function Overview({ campaign, groupNames }: { campaign: CampaignFieldsFragment; groupNames: Map<string, string> }) {
  const rows: Field[] = [
    ['Type', TYPE_LABELS[campaign.type]],
    ['Channels', channelList(campaign.channels)],
    ['Audience', campaign.type === 'automated' ? 'Each contact that meets its trigger' : <Audience key="audience" campaign={campaign} groupNames={groupNames} />],
    // The start of a campaign sent at a local time is when that time first comes anywhere (UTC+14).
    ['Starts', campaign.scheduleDate ? `${formatDateTime(campaign.scheduleDate)}${campaign.localSendAt ? ', where its local send time comes first' : ''}` : 'When launched'],
  ];
  if (campaign.localSendAt) rows.push(['Local send time', `${formatWallClock(campaign.localSendAt)} on each recipient's clock`]);
  if (campaign.sendingHours) rows.push(['Sending hours', `${hoursInWords(campaign.sendingHours)} in each recipient's time zone, instead of the organization's`]);
  if (campaign.exemptFromCaps) rows.push(['Frequency caps', 'Exempt: sent whatever the caps, and not counted against them']);
  rows.push(['Created', formatDateTime(campaign.createdAt)], ['Last changed', formatDateTime(campaign.updatedAt)]);
  if (campaign.progress.total > 0) {
    const p = campaign.progress;
    rows.push(['Recipients', `${formatNumber(p.total)} in all: ${formatNumber(p.sent)} sent, ${formatNumber(p.failed)} failed, ${formatNumber(p.pending)} pending, ${formatNumber(p.canceled)} canceled`]);
  }
  return (
    <Card withBorder>
      <Title order={3} mb="sm">
        Overview
      </Title>
      {campaign.description && <Text mb="sm">{campaign.description}</Text>}
      <FieldTable fields={rows} labelWidth={130} />
    </Card>
  );
}

/** Every contact, or the named groups, contacts and addresses. */
function Audience({ campaign, groupNames }: { campaign: CampaignFieldsFragment; groupNames: Map<string, string> }) {
  if (campaign.recipientType === 'all') return <>Every contact</>;
  const manual = campaign.manualRecipients;
  return (
    <Stack gap={2}>
      {campaign.selectedGroups.length > 0 && (
        <Text size="sm">
          Groups:{' '}
          {campaign.selectedGroups.map((g, i) => (
            <span key={g}>
              {i > 0 && ', '}
              <Anchor component={Link} to={`/contacts?group=${g}`} size="sm">
                {groupNames.get(g) ?? g}
              </Anchor>
            </span>
          ))}
        </Text>
      )}
      {campaign.selectedContacts.length > 0 && <Text size="sm">{plural(campaign.selectedContacts.length, 'contact', 'contacts')}</Text>}
      {manual.length > 0 && (
        <Text size="sm">
          Other addresses: {manual.slice(0, 10).join(', ')}
          {manual.length > 10 && ` and ${formatNumber(manual.length - 10)} more`}
        </Text>
      )}
    </Stack>
  );
}

/** The campaign's message per channel, as written (before rendering). */
function Messages({ campaign }: { campaign: CampaignFieldsFragment }) {
  return (
    <Card withBorder>
      <Title order={3} mb="sm">
        Messages
      </Title>
      <Stack>
        {campaign.channels.map((c: Channel) => {
          const m = campaign.messages[c];
          if (!m) return null;
          return (
            <Stack key={c} gap={4}>
              <Title order={4}>{CHANNEL_LABELS[c]}</Title>
              {m.templateId && (
                <Text size="sm">
                  From a <Anchor component={Link} to="/templates" size="sm">saved template</Anchor>, copied again at launch.
                </Text>
              )}
              <Paper withBorder p="sm">
                {'subject' in m && m.subject && (
                  <Text fw={600} mb="xs">
                    {m.subject}
                  </Text>
                )}
                <Text size="sm" ff="monospace" style={{ whiteSpace: 'pre-wrap', overflowWrap: 'anywhere' }}>
                  {m.content}
                </Text>
              </Paper>
            </Stack>
          );
        })}
      </Stack>
    </Card>
  );
}
