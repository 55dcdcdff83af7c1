import { Alert, Card, Group, List, Loader, Stack, Table, Text, Title } from '@mantine/core';
import { useQuery } from 'urql';
import { ErrorAlert } from '../../components/ErrorAlert';
import { graphql } from '../../gql';
import type { CampaignPageEstimateQuery } from '../../gql/graphql';
import { formatDateTime, formatNumber } from '../../lib/format';
import { CHANNEL_LABELS, plural } from './campaign-fields';

export const CampaignEstimateDocument = graphql(`
  query CampaignPageEstimate($id: ID!) {
    campaignEstimate(id: $id) {
      recipients
      suppressed
      capped
      waiting
      nextOpeningAt
      cost
      balance
      channels {
        channel
        recipients
        unitCost
        cost
        suppressed {
          unsubscribed
          listed
        }
        capped
        zones {
          timezone
          recipients
          sendsAt
        }
      }
    }
  }
`);

export type Estimate = CampaignPageEstimateQuery['campaignEstimate'];

/** The time zones listed by name; the others are summed up after them. */
const ZONES_SHOWN = 5;

interface ZoneTiming {
  timezone: string;
  recipients: number;
  sendsAt?: string | null;
}

/**
 * The estimate's zones, over all its channels (a zone's recipients on each channel added up, as the
 * estimate's recipients are), in the order they would get it (at once first).
 */
function zonesOf(estimate: Estimate): ZoneTiming[] {
  const byZone = new Map<string, ZoneTiming>();
  for (const c of estimate.channels) {
    for (const z of c.zones) {
      const key = `${z.timezone} ${z.sendsAt ?? ''}`;
      const seen = byZone.get(key);
      byZone.set(key, { timezone: z.timezone, sendsAt: z.sendsAt, recipients: (seen?.recipients ?? 0) + z.recipients });
    }
  }
  const at = (z: ZoneTiming) => (z.sendsAt ? Date.parse(z.sendsAt) : -Infinity);
  return [...byZone.values()].sort((x, y) => at(x) - at(y) || y.recipients - x.recipients || x.timezone.localeCompare(y.timezone));
}

/** When a zone's recipients would get it, in words: the browser's date and time, or at once. */
const whenInWords = (sendsAt: string | null | undefined) => (sendsAt ? formatDateTime(sendsAt) : 'at once');

/**
 * The estimate's totals in one sentence, and whether the credits cover it; then whom the frequency
 * caps leave out, and with sending hours or a local send time how many would wait and when each
 * zone (the largest few) would get it.
 */
export function EstimateSummary({ estimate }: { estimate: Estimate }) {
  const zones = zonesOf(estimate);
  // The largest zones, shown in the order they would get it.
  const shown = new Set([...zones].sort((x, y) => y.recipients - x.recipients).slice(0, ZONES_SHOWN));
  const rest = zones.filter((z) => !shown.has(z));
  return (
    <Stack gap="xs">
      <Text>
        {plural(estimate.recipients, 'recipient', 'recipients')} ({formatNumber(estimate.suppressed)} left out: unsubscribed or on the suppression list), costing{' '}
        {plural(estimate.cost, 'credit', 'credits')} of your {formatNumber(estimate.balance)}.
      </Text>
      {estimate.capped > 0 && <Text>{formatNumber(estimate.capped)} left out: they reached their frequency cap.</Text>}
      {estimate.waiting > 0 && (
        <Text>
          {formatNumber(estimate.waiting)} will wait for their sending hours or local time
          {estimate.nextOpeningAt ? `; the first at ${formatDateTime(estimate.nextOpeningAt)}` : ''}.
        </Text>
      )}
      {zones.length > 0 && (
        <List size="sm" aria-label="When each time zone gets it">
          {zones
            .filter((z) => shown.has(z))
            .map((z) => (
              <List.Item key={`${z.timezone} ${z.sendsAt ?? ''}`}>
                {z.timezone} · {plural(z.recipients, 'recipient', 'recipients')} · {whenInWords(z.sendsAt)}
              </List.Item>
            ))}
          {rest.length > 0 && (
            <List.Item>
              {plural(rest.length, 'other zone', 'other zones')} · {plural(rest.reduce((n, z) => n + z.recipients, 0), 'recipient', 'recipients')}
            </List.Item>
          )}
        </List>
      )}
      {estimate.cost > estimate.balance && (
        <Alert color="yellow" title="Not enough credits">
          Launching now needs {formatNumber(estimate.cost)} credits; your organization has {formatNumber(estimate.balance)}.
        </Alert>
      )}
    </Stack>
  );
}

/** What launching now would send and cost, per channel; asked again each time the card is shown. */
export function CampaignEstimateCard({ campaignId }: { campaignId: string }) {
  const [{ data, fetching, error }] = useQuery({ query: CampaignEstimateDocument, variables: { id: campaignId }, requestPolicy: 'network-only' });
  const estimate = data?.campaignEstimate;
  return (
    <Card withBorder>
      <Stack>
        <Title order={3}>Estimate</Title>
        <ErrorAlert error={error} title="The estimate failed" />
        {!estimate && fetching && <Loader size="sm" role="status" aria-label="Loading" />}
        {estimate && (
          <>
            <EstimateSummary estimate={estimate} />
            {/* A Capped column when the caps leave anyone out: the columns closer together to fit the card. */}
            <Table horizontalSpacing={estimate.capped > 0 ? 6 : undefined}>
              <Table.Thead>
                <Table.Tr>
                  <Table.Th>Channel</Table.Th>
                  <Table.Th ta="right">Recipients</Table.Th>
                  <Table.Th ta="right">Unsubscribed</Table.Th>
                  <Table.Th ta="right">Suppressed</Table.Th>
                  {estimate.capped > 0 && <Table.Th ta="right">Capped</Table.Th>}
                  <Table.Th ta="right">Credits each</Table.Th>
                  <Table.Th ta="right">Credits</Table.Th>
                </Table.Tr>
              </Table.Thead>
              <Table.Tbody>
                {estimate.channels.map((c) => (
                  <Table.Tr key={c.channel}>
                    <Table.Td>{CHANNEL_LABELS[c.channel]}</Table.Td>
                    <Table.Td ta="right">{formatNumber(c.recipients)}</Table.Td>
                    <Table.Td ta="right">{formatNumber(c.suppressed.unsubscribed)}</Table.Td>
                    <Table.Td ta="right">{formatNumber(c.suppressed.listed)}</Table.Td>
                    {estimate.capped > 0 && <Table.Td ta="right">{formatNumber(c.capped)}</Table.Td>}
                    <Table.Td ta="right">{formatNumber(c.unitCost)}</Table.Td>
                    <Table.Td ta="right">{formatNumber(c.cost)}</Table.Td>
                  </Table.Tr>
                ))}
              </Table.Tbody>
            </Table>
            <Group>
              <Text size="sm">A personalised SMS is counted at its longest render; each recipient is charged only for what is sent.</Text>
            </Group>
          </>
        )}
      </Stack>
    </Card>
  );
}
