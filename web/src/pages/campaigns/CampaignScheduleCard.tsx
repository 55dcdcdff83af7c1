import { Anchor, Card, Code, List, Text, Title } from '@mantine/core';
import { Link } from 'react-router';
import { FieldTable, type Field } from '../../components/FieldTable';
import type { CampaignFieldsFragment, CampaignStatus } from '../../gql/graphql';
import { triggerEventOf } from './campaign-fields';
import { delayInWords, formatInZone } from './schedule-words';

interface Props {
  campaign: CampaignFieldsFragment;
  /** The status as shown (the live one, when the subscription has a newer one). */
  status: CampaignStatus;
  groupNames: Map<string, string>;
}

/**
 * When a recurring campaign runs (its rule in words, its zone, the next run and those after), or
 * what an automated one reacts to and how long it waits. Nothing for the other types.
 */
export function CampaignScheduleCard({ campaign, status, groupNames }: Props) {
  if (campaign.type === 'recurring' && campaign.recurrence) return <RecurrenceCard recurrence={campaign.recurrence} status={status} />;
  if (campaign.type === 'automated' && campaign.trigger) return <TriggerCard trigger={campaign.trigger} delay={campaign.delay} status={status} groupNames={groupNames} />;
  return null;
}

type Recurrence = NonNullable<CampaignFieldsFragment['recurrence']>;

function RecurrenceCard({ recurrence: r, status }: { recurrence: Recurrence; status: CampaignStatus }) {
  const at = (iso: string | null | undefined) => formatInZone(iso, r.timezone);
  const nextRun = r.nextRunAt ? at(r.nextRunAt) : status === 'draft' || status === 'scheduled' ? 'Set when the campaign starts' : 'None: no run is left';
  const rows: Field[] = [
    [
      'Repeats',
      <Text key="summary" fw={600} size="sm">
        {r.summary}
      </Text>,
    ],
    ['Rule', <Code key="rule">{r.rule}</Code>],
    ['Time zone', r.timezone],
    ['Next run', nextRun],
  ];
  if (r.upcoming.length) {
    rows.push([
      status === 'active' ? 'Upcoming runs' : 'If started now',
      <List key="upcoming" size="sm" listStyleType="none" aria-label="Upcoming runs">
        {r.upcoming.map((iso) => (
          <List.Item key={iso}>{at(iso)}</List.Item>
        ))}
      </List>,
    ]);
  }
  return (
    <Card withBorder>
      <Title order={3} mb="sm">
        Schedule
      </Title>
      <FieldTable fields={rows} labelWidth={130} />
    </Card>
  );
}

type Trigger = NonNullable<CampaignFieldsFragment['trigger']>;

function TriggerCard({ trigger, delay, status, groupNames }: { trigger: Trigger; delay: string | null | undefined; status: CampaignStatus; groupNames: Map<string, string> }) {
  const event = triggerEventOf(trigger.event);
  const when =
    event === 'CONTACT_ADDED_TO_GROUP' ? (
      <>
        When a contact is added to group{' '}
        {trigger.groupId ? (
          <Anchor component={Link} to={`/contacts?group=${trigger.groupId}`} size="sm">
            {groupNames.get(trigger.groupId) ?? trigger.groupId}
          </Anchor>
        ) : (
          '(deleted)'
        )}
      </>
    ) : event === 'CONTACT_CREATED' ? (
      'When a contact is created'
    ) : (
      `On ${trigger.event}`
    );
  const rows: Field[] = [
    ['Trigger', when],
    [
      'Delay',
      <span key="delay">
        {delayInWords(delay)} {delay && <Code>{delay}</Code>}
      </span>,
    ],
  ];
  return (
    <Card withBorder>
      <Title order={3} mb="sm">
        Trigger
      </Title>
      <FieldTable fields={rows} labelWidth={130} />
      <Text size="sm" mt="sm">
        {status === 'active'
          ? 'Active: each contact that meets the trigger is sent the message once, after the delay.'
          : status === 'draft' || status === 'scheduled'
            ? 'Once launched, each contact that meets the trigger is sent the message once, after the delay.'
            : 'No longer reacting to its trigger.'}
      </Text>
    </Card>
  );
}
