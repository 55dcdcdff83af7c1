import { Group, Paper, SegmentedControl, SimpleGrid, Skeleton, Stack, Text, Title } from '@mantine/core';
import { lazy, Suspense, useState } from 'react';
import { useQuery } from 'urql';
import { EmptyState } from '../../components/EmptyState';
import { ErrorAlert } from '../../components/ErrorAlert';
import { graphql } from '../../gql';
import type { Channel, DashboardActivityQuery } from '../../gql/graphql';
import { formatNumber, formatPercent } from '../../lib/format';
import { CHANNELS, CHANNEL_LABELS } from '../logs/log-fields';
import type { Row, Series } from './charts';

// The charting code (uPlot) is loaded only when there is something to draw.
const TimeChart = lazy(() => import('./charts'));

const DashboardActivityDocument = graphql(`
  query DashboardActivity($days: Int!, $channel: Channel, $timeZone: String) {
    dailyStats(days: $days, channel: $channel, timeZone: $timeZone) {
      days
      from
      to
      timeZone
      channel
      daily {
        date
        channel
        sent
        delivered
        failed
        opened
        clicked
        credits
      }
      byChannel {
        channel
        sent
        credits
      }
      totals {
        sent
        delivered
        failed
        opened
        clicked
        bounced
        complained
        credits
      }
    }
  }
`);

type Stats = DashboardActivityQuery['dailyStats'];

const RANGES = ['7', '30', '90'] as const;
type Range = (typeof RANGES)[number];
const ALL = 'all';

/** The browser's time zone, whose days the dashboard counts (UTC when the browser names none). */
const BROWSER_ZONE = (() => {
  const zone = Intl.DateTimeFormat().resolvedOptions().timeZone;
  return zone && /^[A-Za-z][\w+\-/]*$/.test(zone) ? zone : 'UTC';
})();

/** The figures drawn over time, each in a colour of the theme. */
const FIGURES: Series[] = [
  { key: 'sent', label: 'Sent', color: 'indigo.7' },
  { key: 'delivered', label: 'Delivered', color: 'teal.8' },
  { key: 'failed', label: 'Failed', color: 'red.8' },
  { key: 'opened', label: 'Opened', color: 'orange.7' },
  { key: 'clicked', label: 'Clicked', color: 'grape.7' },
];
const CHANNEL_COLORS: Record<Channel, string> = { sms: 'indigo.7', email: 'orange.7', whatsapp: 'teal.8' };

/** A day (`YYYY-MM-DD`, a calendar date) as the user's locale writes a short date. */
const dayFormat = new Intl.DateTimeFormat(undefined, { month: 'short', day: 'numeric', timeZone: 'UTC' });
const formatDay = (date: string) => dayFormat.format(new Date(`${date}T00:00:00Z`));
const creditFormat = new Intl.NumberFormat(undefined, { maximumFractionDigits: 2 });
const formatCredits = (n: number) => creditFormat.format(n);

/** Per day: each figure over the channels counted; and one figure per day by channel. */
function rowsOf(stats: Stats) {
  const days = new Map<string, Row>();
  const sentBy = new Map<string, Row>();
  const creditsBy = new Map<string, Row>();
  for (const d of stats.daily) {
    const day = days.get(d.date) ?? { date: d.date, sent: 0, delivered: 0, failed: 0, opened: 0, clicked: 0 };
    for (const f of FIGURES) day[f.key] = Number(day[f.key]) + d[f.key as 'sent'];
    days.set(d.date, day);
    sentBy.set(d.date, { ...(sentBy.get(d.date) ?? { date: d.date }), [d.channel]: d.sent });
    creditsBy.set(d.date, { ...(creditsBy.get(d.date) ?? { date: d.date }), [d.channel]: d.credits });
  }
  return { figures: [...days.values()], sent: [...sentBy.values()], credits: [...creditsBy.values()] };
}

function Tile({ label, value, note }: { label: string; value: string; note?: string }) {
  return (
    <Paper withBorder p="sm" radius="md" role="group" aria-label={label}>
      <Text size="sm">{label}</Text>
      <Text fz="xl" fw={700}>
        {value}
      </Text>
      {note && <Text size="xs">{note}</Text>}
    </Paper>
  );
}

/**
 * The organization's sends over its last 7, 30 or 90 days (the browser's days), in all or over one channel: its
 * totals, its figures per day and its sends and credits per day by channel.
 */
export function DashboardActivity() {
  const [range, setRange] = useState<Range>('7');
  const [channel, setChannel] = useState<Channel | typeof ALL>(ALL);
  const [{ data, error }] = useQuery({ query: DashboardActivityDocument, variables: { days: Number(range), channel: channel === ALL ? null : channel, timeZone: BROWSER_ZONE } });
  const stats = data?.dailyStats;
  const t = stats?.totals;
  const span = stats ? `the last ${stats.days} days (${formatDay(stats.from)} to ${formatDay(stats.to)}, ${stats.timeZone})` : '';
  const shown: Channel[] = stats?.channel ? [stats.channel] : [...CHANNELS];
  const byChannel = (key: 'sent' | 'credits', format: (n: number) => string) =>
    (stats?.byChannel ?? []).map((c) => `${CHANNEL_LABELS[c.channel]} ${format(c[key])}`).join(', ');

  return (
    <section aria-labelledby="dashboard-activity">
      <Group justify="space-between" mb="xs" gap="sm">
        <Title order={3} size="h4" id="dashboard-activity">
          Sends over time
        </Title>
        <Group gap="sm">
          <SegmentedControl
            aria-label="Channel"
            size="xs"
            value={channel}
            onChange={(v) => setChannel(v as Channel | typeof ALL)}
            data={[{ value: ALL, label: 'All channels' }, ...CHANNELS.map((c) => ({ value: c, label: CHANNEL_LABELS[c] }))]}
          />
          <SegmentedControl aria-label="Range" size="xs" value={range} onChange={(v) => setRange(v as Range)} data={RANGES.map((r) => ({ value: r, label: `${r} days` }))} />
        </Group>
      </Group>
      <ErrorAlert error={error} />
      {!stats || !t ? (
        <Skeleton h={320} />
      ) : t.sent + t.failed === 0 ? (
        <EmptyState title={`Nothing sent in the last ${stats.days} days`}>
          <Text c="dimmed">Sends, deliveries, opens and clicks of the messages you send are drawn here day by day, with the credits they cost.</Text>
        </EmptyState>
      ) : (
        <Stack gap="md">
          <Text size="sm">
            Over {span}. Each day counts the messages sent that day; their deliveries, opens and clicks are counted with them as they come in.
          </Text>
          <SimpleGrid cols={{ base: 2, sm: 3, lg: 6 }}>
            <Tile label="Sent" value={formatNumber(t.sent)} note="Recipients charged" />
            <Tile label="Delivered" value={formatNumber(t.delivered)} note={`${formatPercent(t.delivered, t.sent)} of sent`} />
            <Tile label="Failed" value={formatNumber(t.failed)} note={`${formatPercent(t.failed, t.sent + t.failed)} of attempted`} />
            <Tile label="Opened" value={formatNumber(t.opened)} note={`${formatPercent(t.opened, t.sent)} of sent`} />
            <Tile label="Clicked" value={formatNumber(t.clicked)} note={`${formatPercent(t.clicked, t.sent)} of sent`} />
            <Tile label="Credits spent" value={formatCredits(t.credits)} note={`Over ${stats.days} days`} />
          </SimpleGrid>
          <Suspense fallback={<Skeleton h={260} />}>
            <Charts stats={stats} shown={shown} span={span} byChannel={byChannel} />
          </Suspense>
        </Stack>
      )}
    </section>
  );
}

function Charts({ stats, shown, span, byChannel }: { stats: Stats; shown: Channel[]; span: string; byChannel: (key: 'sent' | 'credits', format: (n: number) => string) => string }) {
  const rows = rowsOf(stats);
  const t = stats.totals;
  const channels = shown.map((c) => ({ key: c, label: CHANNEL_LABELS[c], color: CHANNEL_COLORS[c] }));
  return (
    <Stack gap="lg">
      <TimeChart
        kind="areas"
        title="Sent, delivered, failed, opened and clicked per day"
        summary={`Over ${span}: ${formatNumber(t.sent)} sent, ${formatNumber(t.delivered)} delivered, ${formatNumber(t.failed)} failed, ${formatNumber(t.opened)} opened, ${formatNumber(t.clicked)} clicked.`}
        rows={rows.figures}
        x="date"
        formatX={formatDay}
        series={FIGURES}
      />
      <SimpleGrid cols={{ base: 1, md: 2 }} spacing="lg">
        <TimeChart
          kind="stacked-bars"
          title="Sent per day by channel"
          summary={`Sent over ${span}: ${byChannel('sent', formatNumber)}.`}
          rows={rows.sent}
          x="date"
          formatX={formatDay}
          series={channels}
          height={220}
        />
        <TimeChart
          kind="stacked-bars"
          title="Credits spent per day by channel"
          summary={`Credits spent over ${span}: ${byChannel('credits', formatCredits)}.`}
          rows={rows.credits}
          x="date"
          formatX={formatDay}
          series={channels}
          formatY={formatCredits}
          decimals
          height={220}
        />
      </SimpleGrid>
    </Stack>
  );
}
