import { Alert, Card, Group, Loader, Stack, Table, Text, Title } from '@mantine/core';
import { useQuery } from 'urql';
import { ErrorAlert } from '../../components/ErrorAlert';
import { graphql } from '../../gql';
import type { CampaignPageEstimateQuery } from '../../gql/graphql';
import { formatNumber } from '../../lib/format';
import { CHANNEL_LABELS } from './campaign-fields';

export const CampaignEstimateDocument = graphql(`
  query CampaignPageEstimate($id: ID!) {
    campaignEstimate(id: $id) {
      recipients
      suppressed
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
      }
    }
  }
`);

export type Estimate = CampaignPageEstimateQuery['campaignEstimate'];

/** The estimate's totals in one sentence, and whether the credits cover it. */
export function EstimateSummary({ estimate }: { estimate: Estimate }) {
  return (
    <Stack gap="xs">
      <Text>
        {formatNumber(estimate.recipients)} recipients ({formatNumber(estimate.suppressed)} left out: unsubscribed or on the suppression list), costing{' '}
        {formatNumber(estimate.cost)} credits of your {formatNumber(estimate.balance)}.
      </Text>
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
            <Table>
              <Table.Thead>
                <Table.Tr>
                  <Table.Th>Channel</Table.Th>
                  <Table.Th ta="right">Recipients</Table.Th>
                  <Table.Th ta="right">Unsubscribed</Table.Th>
                  <Table.Th ta="right">Suppressed</Table.Th>
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
