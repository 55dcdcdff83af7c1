import { Code, Fieldset, Select, Stack, Text, TextInput } from '@mantine/core';
import { useMemo } from 'react';
import type { CampaignFieldsFragment, RecurrenceInput } from '../../gql/graphql';
import { timeZone } from './campaign-fields';
import { timeZones } from './schedule-words';

/** A recurring campaign's rule and zone, as the form holds them. */
export type RecurrenceDraft = RecurrenceInput;

export const recurrenceDraftOf = (campaign: CampaignFieldsFragment | null): RecurrenceDraft => ({
  rule: campaign?.recurrence?.rule ?? '',
  timezone: campaign?.recurrence?.timezone ?? timeZone,
});

/** The input to send, trimmed. */
export const recurrenceInput = (draft: RecurrenceDraft): RecurrenceInput => ({ rule: draft.rule.trim(), timezone: draft.timezone });

interface Props {
  value: RecurrenceDraft;
  onChange: (value: RecurrenceDraft) => void;
  /** The server's messages by field (`recurrence.rule`, ...), from `fieldErrors`. */
  errors: Record<string, string>;
}

/**
 * When a recurring campaign runs: an RFC 5545 rule read in a time zone. The server checks the rule
 * (at most hourly, a run still to come) and says it in words on the campaign's page.
 */
export function RecurrenceFields({ value, onChange, errors }: Props) {
  const zones = useMemo(() => timeZones(timeZone), []);
  return (
    <Fieldset legend="Schedule">
      <Stack>
        <TextInput
          label="Recurrence rule"
          required
          placeholder="FREQ=WEEKLY;BYDAY=MO;BYHOUR=9"
          description={
            <>
              An RFC 5545 rule, at most hourly: <Code>FREQ=DAILY;BYHOUR=8</Code> every day at 08:00, <Code>FREQ=WEEKLY;BYDAY=MO,TH;BYHOUR=9;BYMINUTE=30</Code> Mondays and Thursdays
              at 09:30, <Code>FREQ=MONTHLY;BYMONTHDAY=1;BYHOUR=10</Code> the 1st of each month at 10:00. Minutes not given are 0.
            </>
          }
          value={value.rule}
          onChange={(e) => onChange({ ...value, rule: e.currentTarget.value })}
          error={errors['recurrence.rule'] ?? errors.recurrence}
        />
        <Select
          label="Time zone"
          required
          description="The rule's times are read on this zone's clock, daylight-saving changes included."
          data={zones}
          value={value.timezone}
          onChange={(v) => v && onChange({ ...value, timezone: v })}
          searchable
          allowDeselect={false}
          nothingFoundMessage="No such time zone"
          maxDropdownHeight={280}
          error={errors['recurrence.timezone']}
        />
        <Text size="sm">Each run sends to the audience as it is at that time. The first run is the rule&apos;s first time after the launch (or after Start at).</Text>
      </Stack>
    </Fieldset>
  );
}
