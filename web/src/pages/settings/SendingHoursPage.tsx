import { Button, Divider, Group, Paper, Stack, Text, Title } from '@mantine/core';
import { useEffect, useState } from 'react';
import { useMutation, useQuery } from 'urql';
import { ErrorAlert } from '../../components/ErrorAlert';
import { PageHeader } from '../../components/PageHeader';
import { PageLoader } from '../../components/PageLoader';
import { SendingHoursFields, hoursDraftOf, hoursOf, type HoursDraft } from '../../components/SendingHoursFields';
import { TimeZoneSelect } from '../../components/TimeZoneSelect';
import { graphql } from '../../gql';
import { fieldErrors } from '../../lib/errors';
import { FrequencyCapsFields, capsDraftOf, capsInWords, capsKey, capsOf, missingCapFigures, type CapsDraft, type SavedCaps } from './FrequencyCapsFields';

const SendingHoursSetting = graphql(`
  query SendingHoursSetting {
    organization {
      _id
      timezone
      sendingHours
      frequencyCaps {
        email {
          messages
          days
        }
        sms {
          messages
          days
        }
        whatsapp {
          messages
          days
        }
      }
    }
  }
`);

const SendingHoursUpdate = graphql(`
  mutation SendingHoursUpdate($input: OrganizationInput!) {
    updateOrganization(input: $input) {
      _id
      timezone
      sendingHours
      frequencyCaps {
        email {
          messages
          days
        }
        sms {
          messages
          days
        }
        whatsapp {
          messages
          days
        }
      }
    }
  }
`);

/** What the saved settings mean, said once saved. */
const savedWords = (zone: string, hours: string | null, caps: SavedCaps | null | undefined) =>
  `Saved: contacts without a zone of their own are in ${zone}; campaigns reach recipients ${hours ? `between ${hours.slice(0, 5)} and ${hours.slice(6)} their time` : 'at any time'}; ${capsInWords(caps) ? `frequency caps: ${capsInWords(caps)}` : 'no frequency caps'}.`;

/**
 * The organization's time zone (the one of every contact without a zone of its own), its sending
 * hours (when campaigns may reach a recipient, on the recipient's clock) and its frequency caps (how
 * many campaign messages one address may get per channel and period), saved together (admins).
 */
export default function SendingHoursPage() {
  const [{ data, fetching, error }] = useQuery({ query: SendingHoursSetting });
  const [state, update] = useMutation(SendingHoursUpdate);
  const saved = data?.organization.timezone;
  // Undefined until read; null when the organization has none (any time).
  const savedHours = data?.organization.sendingHours;
  const savedCaps = data?.organization.frequencyCaps;
  const savedCapsKey = savedCaps ? capsKey(savedCaps) : undefined;
  const [zone, setZone] = useState<string | null>(null);
  const [hours, setHours] = useState<HoursDraft>(() => hoursDraftOf(null));
  const [caps, setCaps] = useState<CapsDraft>(() => capsDraftOf(null));
  // The caps' figures left empty, said when Save is pressed (nothing is sent then).
  const [missing, setMissing] = useState<Record<string, string>>({});
  const [done, setDone] = useState(false);
  useEffect(() => {
    if (saved) setZone(saved);
  }, [saved]);
  useEffect(() => {
    if (savedHours !== undefined) setHours(hoursDraftOf(savedHours));
  }, [savedHours]);
  useEffect(() => {
    if (savedCapsKey !== undefined) setCaps(capsDraftOf(savedCaps));
    // eslint-disable-next-line react-hooks/exhaustive-deps -- only when the saved caps change, not with each answer's new object
  }, [savedCapsKey]);
  const problems = fieldErrors(state.error);
  const hoursChanged = savedHours !== undefined && hoursOf(hours) !== savedHours;
  const capsInput = capsOf(caps);
  // A cap with an empty figure is a change too: Save then says what is missing.
  const capsChanged = savedCapsKey !== undefined && (!capsInput || capsKey(capsInput) !== savedCapsKey);
  const capProblems = Object.fromEntries(Object.entries(problems).filter(([field]) => field === 'frequencyCaps' || field.startsWith('frequencyCaps.')));
  const placed = !!(problems.timezone || problems.sendingHours || Object.keys(capProblems).length);
  const save = async () => {
    setDone(false);
    if (!zone) return;
    const empty = missingCapFigures(caps);
    setMissing(empty);
    if (Object.keys(empty).length) return;
    // Only what changed: each change is audited on its own. The caps go whole: they replace the saved ones.
    const input = {
      ...(zone !== saved ? { timezone: zone } : {}),
      ...(hoursChanged ? { sendingHours: hoursOf(hours) } : {}),
      ...(capsChanged && capsInput ? { frequencyCaps: capsInput } : {}),
    };
    const result = await update({ input });
    if (!result.error) setDone(true);
  };
  return (
    <>
      <PageHeader title="Sending hours and caps" />
      <ErrorAlert error={error ?? (placed ? undefined : state.error)} />
      {!saved && fetching && <PageLoader />}
      {saved && (
        <Paper withBorder p="lg" radius="md" maw={720}>
          <Stack>
            <TimeZoneSelect
              label="Organization time zone"
              description="The time zone of every contact without one of its own: a contact's own zone is set on it or in an import, or taken from its phone number's country when the country has one zone."
              value={zone}
              onChange={(z) => {
                setZone(z);
                setDone(false);
              }}
              error={problems.timezone}
            />
            <SendingHoursFields
              label="Limit campaign sending hours"
              description="The hours are read in each recipient's time zone, a window ending before it starts crosses midnight, and a campaign message due outside it waits for the next opening; automated campaigns and single sends are never held."
              value={hours}
              onChange={(h) => {
                setHours(h);
                setDone(false);
              }}
              error={problems.sendingHours}
            />
            <Divider />
            <Stack gap="sm" component="section" aria-labelledby="frequency-caps-title">
              <Title order={3} size="h4" id="frequency-caps-title">
                Frequency caps
              </Title>
              <Text size="sm">
                An address that already got this many campaign messages on the channel in the period is left out of the next campaign (never charged); automated
                campaigns, resends, test sends, single sends and exempt campaigns are never capped and never count.
              </Text>
              <FrequencyCapsFields
                value={caps}
                onChange={(c) => {
                  setCaps(c);
                  setMissing({});
                  setDone(false);
                }}
                errors={{ ...capProblems, ...missing }}
              />
            </Stack>
            <Group>
              <Button loading={state.fetching} onClick={() => void save()} disabled={!zone || (zone === saved && !hoursChanged && !capsChanged)}>
                Save
              </Button>
              {done && (
                <Text size="sm" role="status">
                  {savedWords(saved, savedHours ?? null, savedCaps)}
                </Text>
              )}
            </Group>
          </Stack>
        </Paper>
      )}
    </>
  );
}
