import { Card, Group, Progress, Skeleton, Stack, Table, Text, Title } from '@mantine/core';
import { lazy, Suspense, useEffect } from 'react';
import { useQuery } from 'urql';
import { ErrorAlert } from '../../components/ErrorAlert';
import { graphql } from '../../gql';
import type { CampaignFunnelQuery } from '../../gql/graphql';
import { formatNumber, formatPercent } from '../../lib/format';
import { CHANNEL_LABELS } from './campaign-fields';

// The charting code (uPlot) comes with the timeline only, once there is one to draw.
const TimeChart = lazy(() => import('../dashboard/charts'));

const CampaignFunnelDocument = graphql(`
  query CampaignFunnel($id: ID!) {
    campaign(id: $id) {
      _id
      funnel {
        audience
        suppressed
        capped
        sent
        failed
        delivered
        opened
        clicked
        bounced
        complained
        unsubscribed
        credits
        byChannel {
          channel
          audience
          sent
          failed
          delivered
          opened
          clicked
          bounced
          complained
          unsubscribed
          credits
        }
        timeline {
          bucketMinutes
          points {
            at
            sent
            failed
          }
        }
      }
    }
  }
`);

type Funnel = NonNullable<CampaignFunnelQuery['campaign']>['funnel'];

const creditFormat = new Intl.NumberFormat(undefined, { maximumFractionDigits: 2 });

/** Each step of the funnel, as a share of the audience. */
const STEPS = [
  { key: 'audience', label: 'Audience', color: 'gray.7' },
  { key: 'sent', label: 'Sent', color: 'indigo.7' },
  { key: 'delivered', label: 'Delivered', color: 'teal.8' },
  { key: 'opened', label: 'Opened', color: 'orange.7' },
  { key: 'clicked', label: 'Clicked', color: 'grape.7' },
  { key: 'bounced', label: 'Bounced', color: 'red.8' },
  { key: 'unsubscribed', label: 'Unsubscribed', color: 'dark.4' },
] as const;

/** The rows of the split by channel: a channel per column, so it fits however many channels. */
const BY_CHANNEL = [
  { key: 'audience', label: 'Audience' },
  { key: 'sent', label: 'Sent' },
  { key: 'failed', label: 'Failed' },
  { key: 'delivered', label: 'Delivered' },
  { key: 'opened', label: 'Opened' },
  { key: 'clicked', label: 'Clicked' },
  { key: 'bounced', label: 'Bounced' },
  { key: 'complained', label: 'Reported as spam' },
  { key: 'unsubscribed', label: 'Unsubscribed' },
  { key: 'credits', label: 'Credits spent' },
] as const;

interface Props {
  campaignId: string;
  /** Changes with each progress event of the campaign: the funnel is read again. */
  stamp?: string;
}

/**
 * A launched campaign from its audience to its clicks: the funnel in all, the split by channel with
 * what each cost, and its sends over time.
 */
export function CampaignFunnelCard({ campaignId, stamp }: Props) {
  const [{ data, error }, reexecute] = useQuery({ query: CampaignFunnelDocument, variables: { id: campaignId } });
  useEffect(() => {
    if (stamp) reexecute({ requestPolicy: 'network-only' });
  }, [stamp, reexecute]);
  const funnel = data?.campaign?.funnel;
  return (
    <Card withBorder component="section" aria-labelledby="campaign-funnel-title">
      <Stack>
        <Title order={3} id="campaign-funnel-title">
          Funnel
        </Title>
        <ErrorAlert error={error} />
        {!funnel ? <Skeleton h={160} /> : <FunnelBody funnel={funnel} />}
      </Stack>
    </Card>
  );
}

function FunnelBody({ funnel: f }: { funnel: Funnel }) {
  if (f.audience === 0 && f.sent + f.failed === 0) return <Text size="sm">Nothing sent yet: the funnel fills in as the campaign sends.</Text>;
  return (
    <>
      <Stack gap="xs" role="list" aria-label="Funnel steps">
        {/* Only email bounces: an SMS or WhatsApp campaign's funnel has no such step. */}
        {STEPS.filter((s) => s.key !== 'bounced' || f.byChannel.some((c) => c.channel === 'email')).map((s) => (
          <div key={s.key} role="listitem" aria-label={s.label}>
            <Group justify="space-between" gap="xs">
              <Text size="sm">{s.label}</Text>
              <Text size="sm" fw={600}>
                {formatNumber(f[s.key])}{' '}
                <Text span size="sm" fw={400}>
                  ({formatPercent(f[s.key], f.audience)} of the audience)
                </Text>
              </Text>
            </Group>
            <Progress value={f.audience ? Math.min(100, (f[s.key] / f.audience) * 100) : 0} color={s.color} size="lg" aria-hidden />
          </div>
        ))}
      </Stack>
      <Text size="sm">
        {formatNumber(f.failed)} failed, {formatNumber(f.complained)} reported as spam
        {f.suppressed ? `, ${formatNumber(f.suppressed)} left out at launch (unsubscribed or suppressed)` : ''}
        {f.capped ? `, ${formatNumber(f.capped)} left out at launch (frequency cap reached)` : ''}; {creditFormat.format(f.credits)} credits spent.
        Unsubscribed counts those who left through the campaign's unsubscribe links.
      </Text>
      <Table striped fz="sm" aria-label="Funnel by channel">
        <Table.Thead>
          <Table.Tr>
            <Table.Th>Recipients</Table.Th>
            {f.byChannel.map((c) => (
              <Table.Th key={c.channel} ta="right">
                {CHANNEL_LABELS[c.channel]}
              </Table.Th>
            ))}
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {BY_CHANNEL.map((row) => (
            <Table.Tr key={row.key}>
              <Table.Th scope="row" fw={400}>
                {row.label}
              </Table.Th>
              {f.byChannel.map((c) => (
                <Table.Td key={c.channel} ta="right">
                  {row.key === 'credits' ? creditFormat.format(c.credits) : formatNumber(c[row.key])}
                </Table.Td>
              ))}
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
      {f.timeline.points.length > 0 && (
        <Suspense fallback={<Skeleton h={200} />}>
          <Timeline funnel={f} />
        </Suspense>
      )}
    </>
  );
}

/** Its sends over time, in stretches of `bucketMinutes`. */
function Timeline({ funnel: f }: { funnel: Funnel }) {
  const points = f.timeline.points;
  const oneDay = new Date(points[0]!.at).toDateString() === new Date(points[points.length - 1]!.at).toDateString();
  const format = new Intl.DateTimeFormat(undefined, oneDay ? { timeStyle: 'short' } : { dateStyle: 'short', timeStyle: 'short' });
  const minutes = f.timeline.bucketMinutes;
  return (
    <TimeChart
      kind="stacked-bars"
      title={`Recipients settled per ${minutes === 1 ? 'minute' : `${formatNumber(minutes)} minutes`}`}
      summary={`${formatNumber(f.sent)} sent and ${formatNumber(f.failed)} failed from ${format.format(new Date(points[0]!.at))} to ${format.format(new Date(points[points.length - 1]!.at))}.`}
      rows={points.map((p) => ({ at: p.at, sent: p.sent, failed: p.failed }))}
      x="at"
      formatX={(at) => format.format(new Date(at))}
      series={[
        { key: 'sent', label: 'Sent', color: 'indigo.7' },
        { key: 'failed', label: 'Failed', color: 'red.8' },
      ]}
      height={200}
    />
  );
}
