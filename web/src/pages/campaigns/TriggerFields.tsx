import { Code, Fieldset, Select, Stack, TextInput } from '@mantine/core';
import type { CampaignFieldsFragment, CampaignTriggerEvent, CampaignTriggerInput } from '../../gql/graphql';
import { formatNumber } from '../../lib/format';
import { TRIGGER_LABELS, triggerEventOf } from './campaign-fields';
import { durationInWords } from './schedule-words';

/** An automated campaign's trigger and delay, as the form holds them. */
export interface TriggerDraft {
  event: CampaignTriggerEvent;
  groupId: string | null;
  delay: string;
}

export const triggerDraftOf = (campaign: CampaignFieldsFragment | null): TriggerDraft => ({
  event: triggerEventOf(campaign?.trigger?.event) ?? 'CONTACT_CREATED',
  groupId: campaign?.trigger?.groupId ?? null,
  delay: campaign?.delay ?? 'PT0S',
});

/** The trigger as the API takes it: a group only with the group event. */
export const triggerInput = (draft: TriggerDraft): CampaignTriggerInput =>
  draft.event === 'CONTACT_ADDED_TO_GROUP' ? { event: draft.event, groupId: draft.groupId } : { event: draft.event };

/** The delay as the API takes it (empty means at once). */
export const delayInput = (draft: TriggerDraft): string => draft.delay.trim().toUpperCase() || 'PT0S';

/** A group, as the trigger offers it. */
export interface GroupOption {
  _id: string;
  name: string;
  contactCount: number;
}

interface Props {
  value: TriggerDraft;
  onChange: (value: TriggerDraft) => void;
  groups: GroupOption[];
  /** The server's messages by field (`trigger.groupId`, `delay`, ...), from `fieldErrors`. */
  errors: Record<string, string>;
}

/**
 * What an automated campaign reacts to, and how long it waits: each contact that meets the trigger
 * is sent the message once, after the delay, for as long as the campaign is active.
 */
export function TriggerFields({ value, onChange, groups, errors }: Props) {
  const words = durationInWords(value.delay.trim() || 'PT0S');
  return (
    <Fieldset legend="Trigger">
      <Stack>
        <Select
          label="Trigger"
          required
          description="Once launched, the campaign sends its message to each contact this happens to, once per contact."
          data={Object.entries(TRIGGER_LABELS).map(([v, label]) => ({ value: v, label }))}
          value={value.event}
          onChange={(v) => v && onChange({ ...value, event: v as CampaignTriggerEvent })}
          allowDeselect={false}
          error={errors['trigger.event'] ?? errors.trigger}
        />
        {value.event === 'CONTACT_ADDED_TO_GROUP' && (
          <Select
            label="Group"
            required
            description="A contact added to this group, created in it or imported into it."
            placeholder={groups.length ? 'Choose a group' : 'No groups yet'}
            data={groups.map((g) => ({ value: g._id, label: `${g.name} (${formatNumber(g.contactCount)})` }))}
            value={value.groupId}
            onChange={(groupId) => onChange({ ...value, groupId })}
            searchable
            nothingFoundMessage="No such group"
            error={errors['trigger.groupId']}
          />
        )}
        <TextInput
          label="Delay"
          description={
            <>
              How long to wait after the trigger, as an ISO 8601 duration: <Code>PT0S</Code> at once, <Code>PT30M</Code> 30 minutes, <Code>PT1H</Code> an hour, <Code>P2D</Code> 2
              days; at most a year.
              {words && ` This one: ${words === 'no time' ? 'at once' : words}.`}
            </>
          }
          placeholder="PT0S"
          value={value.delay}
          onChange={(e) => onChange({ ...value, delay: e.currentTarget.value })}
          error={errors.delay}
        />
      </Stack>
    </Fieldset>
  );
}
