import { Anchor, Box, Card, Group, Paper, Progress, SimpleGrid, Stack, Text, Title, useMatches } from '@mantine/core';
import { Link } from 'react-router';
import type { CampaignFieldsFragment, CampaignStatus, Channel } from '../../gql/graphql';
import { formatDateTime, formatNumber, formatPercent } from '../../lib/format';
import { useMe } from '../../lib/me';
import { PaceLines, type Pace } from './CampaignPace';

interface Props {
  status: CampaignStatus;
  channels: readonly Channel[];
  analytics: Omit<CampaignFieldsFragment['analytics'], '__typename'>;
  /** The audience fixed at launch (0 before the campaign starts). */
  total: number;
  /** Whether the counters come live from the campaign's progress subscription. */
  live: boolean;
  /** How it is being sent, while it is active (null otherwise). */
  pace?: Pace | null;
  /** Its recipients held until they are due, while it is active (null otherwise). */
  held?: Held | null;
  /**
   * Whether it is held to the frequency caps (not automated, not exempt): its Capped counter shows
   * then, or whenever it is not 0.
   */
  heldToCaps?: boolean;
}

/** Of the recipients still to send, those held until they are due, and when the first of them is. */
export interface Held {
  waiting: number;
  nextOpeningAt?: string | null;
  /** The campaign is sent at a local time: recipients also wait for it to come in their zone. */
  localTime: boolean;
}

/** `12 waiting for their sending hours · next at Dec 5, 2026, 9:00 AM`. */
function HeldLine({ held }: { held: Held }) {
  const what = held.localTime ? 'their local send time or sending hours' : 'their sending hours';
  return (
    <Text size="sm">
      {formatNumber(held.waiting)} waiting for {what}
      {held.nextOpeningAt && ` · next at ${formatDateTime(held.nextOpeningAt)}`}
    </Text>
  );
}

interface StatProps {
  label: string;
  value: number;
  of: number;
  ofLabel: string;
}

/** One counter: its number, and its share of what it is a share of. */
function Stat({ label, value, of, ofLabel }: StatProps) {
  return (
    <Paper withBorder p="sm" role="group" aria-label={label} h="100%">
      <Text size="sm">{label}</Text>
      <Text fz="xl" fw={700}>
        {formatNumber(value)}
      </Text>
      <Text size="sm">
        {formatPercent(value, of)} {ofLabel}
      </Text>
    </Paper>
  );
}

/** The columns (of twelve) the `i`th of `n` counters spans, `perRow` a row: those of a last, shorter row share it. */
function spanOf(i: number, n: number, perRow: number): number {
  const last = n % perRow;
  return last && i >= n - last ? 12 / last : 12 / perRow;
}

/**
 * The campaign's counters (as `Analytics` has them) with their percentages, and while it sends, how
 * far it got: the sent and failed recipients of its audience, and how many wait for their sending
 * hours or local send time.
 */
export function CampaignAnalyticsCard({ status, channels, analytics: a, total, live, pace, held, heldToCaps = true }: Props) {
  const { isAdmin } = useMe();
  const attempted = a.sent + a.failed;
  const sending = status === 'active' && total > 0;
  // Only email bounces or draws spam reports; counters that moved anyway still show.
  const email = channels.includes('email') || a.bounced > 0 || a.complained > 0;
  // Left out at launch: unsubscribed or suppressed, and over a frequency cap. The audience is all of them and the attempted.
  const audience = attempted + a.suppressed + a.capped;
  const stats: StatProps[] = [
    { label: 'Sent', value: a.sent, of: attempted, ofLabel: 'of attempted' },
    { label: 'Failed', value: a.failed, of: attempted, ofLabel: 'of attempted' },
    { label: 'Delivered', value: a.delivered, of: a.sent, ofLabel: 'of sent' },
    { label: 'Opened', value: a.opened, of: a.sent, ofLabel: 'of sent' },
    { label: 'Clicked', value: a.clicked, of: a.sent, ofLabel: 'of sent' },
    ...(email
      ? [
          { label: 'Bounced', value: a.bounced, of: a.sent, ofLabel: 'of sent' },
          { label: 'Complained', value: a.complained, of: a.sent, ofLabel: 'of sent' },
        ]
      : []),
    { label: 'Suppressed', value: a.suppressed, of: audience, ofLabel: 'of the audience' },
    ...(heldToCaps || a.capped > 0 ? [{ label: 'Capped', value: a.capped, of: audience, ofLabel: 'of the audience' }] : []),
  ];
  // Two a row on a phone; else three or four, whichever fills the rows best (six or nine: three).
  const perRow = useMatches({ base: 2, sm: stats.length % 3 === 0 ? 3 : 4 }, { getInitialValueInEffect: false });
  return (
    <Card withBorder>
      <Stack>
        <Group justify="space-between">
          <Title order={3}>Analytics</Title>
          {live && <Text size="sm">Updating live</Text>}
        </Group>
        {sending && (
          <Stack gap={4}>
            <Progress value={Math.min(100, (attempted / total) * 100)} aria-label="Sending progress" striped animated />
            <Text size="sm">
              {formatNumber(attempted)} of {formatNumber(total)} recipients done ({formatPercent(attempted, total)})
            </Text>
            {held && held.waiting > 0 && <HeldLine held={held} />}
          </Stack>
        )}
        {status === 'active' && pace && <PaceLines pace={pace} />}
        {/* Twelve columns, all rows as tall as the tallest: each counter spans its row's share, a last row short of counters widening them. */}
        <SimpleGrid cols={12} style={{ gridAutoRows: '1fr' }}>
          {stats.map((stat, i) => (
            <Box key={stat.label} style={{ gridColumn: `span ${spanOf(i, stats.length, perRow)}` }}>
              <Stat {...stat} />
            </Box>
          ))}
        </SimpleGrid>
        <Text size="sm">
          Delivered counts provider receipts; opened and clicked count tracked emails (scanners are left out).
          {stats.some((x) => x.label === 'Capped') && ' Capped counts addresses left out at launch because they had reached their frequency cap (never charged).'}
        </Text>
        {email && (
          <Text size="sm">
            Bounced counts emails mail servers refused or sent back; complained counts spam reports. Herald suppresses a bounced address by
            itself (at a hard bounce, or after repeated soft ones) and unsubscribes from email whoever reports spam
            {isAdmin ? (
              <>
                : see{' '}
                <Anchor component={Link} to="/settings/suppressions" size="sm">
                  Suppressions
                </Anchor>
                .
              </>
            ) : (
              '.'
            )}
          </Text>
        )}
      </Stack>
    </Card>
  );
}
