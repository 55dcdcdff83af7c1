import { Alert, Box, Button, Checkbox, Fieldset, Grid, Group, List, MultiSelect, Radio, Select, Stack, Switch, TagsInput, Text, TextInput, Textarea } from '@mantine/core';
import { useState, type FormEvent } from 'react';
import { Link, useNavigate, useParams } from 'react-router';
import { useMutation, useQuery, type CombinedError } from 'urql';
import { ContactPicker, type ContactOption } from '../../components/ContactPicker';
import { ErrorAlert } from '../../components/ErrorAlert';
import { PageHeader } from '../../components/PageHeader';
import { PageLoader } from '../../components/PageLoader';
import { SendingHoursFields, hoursDraftOf, hoursInWords, hoursOf, type HoursDraft } from '../../components/SendingHoursFields';
import { graphql } from '../../gql';
import type { CampaignFieldsFragment, CampaignType, Channel } from '../../gql/graphql';
import { fieldErrors } from '../../lib/errors';
import { formatNumber } from '../../lib/format';
import { useMe } from '../../lib/me';
import { capsInWords } from '../settings/FrequencyCapsFields';
import { CHANNELS, CHANNEL_LABELS, TYPE_LABELS, channelList, fromLocalInput, plural, timeZone, toLocalInput } from './campaign-fields';
import { ComposePreviewCard, type PreviewText } from './ComposePreviewCard';
import { MessageFields, emptyMessage, messageInput, type MessageDraft, type TemplateOption } from './MessageFields';
import { RecurrenceFields, recurrenceDraftOf, recurrenceInput } from './RecurrenceFields';
import { TriggerFields, delayInput, triggerDraftOf, triggerInput } from './TriggerFields';

const CampaignForEdit = graphql(`
  query CampaignForEdit($id: ID!) {
    campaign(id: $id) {
      ...CampaignFields
    }
  }
`);

/**
 * What the form offers to choose from: the groups (audience) and the saved templates (messages); and
 * the organization's sending hours, which a campaign without its own keeps, and its frequency caps,
 * which an exempt campaign escapes.
 */
const CampaignFormChoices = graphql(`
  query CampaignFormChoices {
    organization {
      _id
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
    groups(first: 1000) {
      edges {
        node {
          _id
          name
          contactCount
        }
      }
    }
    templates(first: 1000) {
      edges {
        node {
          _id
          name
          channel
          subject
          content
        }
      }
    }
  }
`);

const CreateCampaignDocument = graphql(`
  mutation CampaignFormCreate($input: CreateCampaignInput!) {
    createCampaign(input: $input) {
      ...CampaignFields
    }
  }
`);

const UpdateCampaignDocument = graphql(`
  mutation CampaignFormUpdate($id: ID!, $input: UpdateCampaignInput!) {
    updateCampaign(id: $id, input: $input) {
      ...CampaignFields
    }
  }
`);

const TYPE_DESCRIPTIONS: Record<CampaignType, string> = {
  broadcast: 'One message to a wide audience',
  targeted: 'A message to a chosen audience',
  automated: 'Sent to each contact when an event happens to it',
  recurring: 'Sent again and again on a schedule',
};

/** What the optional start time means for each type. */
const START_HELP: Record<CampaignType, string> = {
  broadcast: 'Optional: a launch before this time waits for it; leave empty to send as soon as it is launched.',
  targeted: 'Optional: a launch before this time waits for it; leave empty to send as soon as it is launched.',
  recurring: 'Optional: the rule starts at this time; leave empty to start it at launch.',
  automated: '',
};

/** When a broadcast or targeted campaign reaches its recipients: all at its start time, or each at a local time. */
type Timing = 'start' | 'local';

/** The types a local send time is for: a recurring campaign has its rule, an automated one its trigger. */
const hasLocalTime = (type: CampaignType) => type === 'broadcast' || type === 'targeted';

/** The types sending hours hold: an automated campaign answers a contact's own action, never held. */
const hasSendingHours = (type: CampaignType) => type !== 'automated';

/** The types frequency caps hold (so that can be exempt from them): an automated campaign is never capped. */
const hasCaps = (type: CampaignType) => type !== 'automated';

/** A local send time as a `datetime-local` input holds it: the server's `2026-12-05T09:00:00` to the minute. */
const localInputOf = (localSendAt: string | null | undefined) => localSendAt?.slice(0, 16) ?? '';

/** `/campaigns/new` composes a draft; `/campaigns/:id/edit` changes a draft or scheduled campaign. */
export default function CampaignFormPage() {
  const { id } = useParams();
  const { me, isAdmin } = useMe();
  const [{ data, error }] = useQuery({ query: CampaignForEdit, variables: { id: id ?? '' }, pause: !id });

  if (me && !isAdmin) {
    return (
      <Alert color="yellow" title="Admins only" role="alert">
        Only admins of your organization create and change campaigns.
      </Alert>
    );
  }
  if (!id) return <CampaignForm campaign={null} />;
  if (error) return <ErrorAlert error={error} />;
  if (!data) return <PageLoader />;
  return <CampaignForm key={data.campaign._id} campaign={data.campaign} />;
}

/** The form itself: a new campaign (`campaign` null) or the fields an existing one can still change. */
function CampaignForm({ campaign }: { campaign: CampaignFieldsFragment | null }) {
  const navigate = useNavigate();
  const [{ data: choices }] = useQuery({ query: CampaignFormChoices });
  const groups = choices?.groups.edges.map((e) => e.node) ?? [];
  const templates: TemplateOption[] = choices?.templates.edges.map((e) => e.node) ?? [];

  const [name, setName] = useState(campaign?.name ?? '');
  const [description, setDescription] = useState('');
  const [type, setType] = useState<CampaignType>(campaign?.type ?? 'broadcast');
  const [channels, setChannels] = useState<Channel[]>(campaign?.channels ?? ['sms']);
  const [messages, setMessages] = useState<Record<Channel, MessageDraft>>(() => ({
    sms: { ...emptyMessage(), ...campaign?.messages.sms },
    email: { ...emptyMessage(), ...campaign?.messages.email },
    whatsapp: { ...emptyMessage(), ...campaign?.messages.whatsapp },
  }));
  const [groupIds, setGroupIds] = useState<string[]>([]);
  const [contacts, setContacts] = useState<ContactOption[]>([]);
  const [manual, setManual] = useState<string[]>([]);
  // A campaign sent at a local time has the start the server derived from it: not a time of its own to show.
  const initialSchedule = campaign?.localSendAt ? '' : toLocalInput(campaign?.scheduleDate);
  const [schedule, setSchedule] = useState(initialSchedule);
  const [timing, setTiming] = useState<Timing>(campaign?.localSendAt ? 'local' : 'start');
  const initialLocal = localInputOf(campaign?.localSendAt);
  const [localAt, setLocalAt] = useState(initialLocal);
  const organizationHours = choices?.organization.sendingHours ?? null;
  const organizationCaps = choices && capsInWords(choices.organization.frequencyCaps);
  const capsNow = choices ? (organizationCaps ? `The organization's caps: ${organizationCaps}.` : 'The organization has no caps at the moment.') : '';
  const [initialHours] = useState(() => hoursDraftOf(campaign?.sendingHours));
  const [ownHours, setOwnHours] = useState(initialHours);
  const [initialRecurrence] = useState(() => recurrenceDraftOf(campaign));
  const [recurrence, setRecurrence] = useState(initialRecurrence);
  const [initialTrigger] = useState(() => triggerDraftOf(campaign));
  const [trigger, setTrigger] = useState(initialTrigger);
  const initialExempt = campaign?.exemptFromCaps ?? false;
  const [exempt, setExempt] = useState(initialExempt);

  const [createState, create] = useMutation(CreateCampaignDocument);
  const [updateState, update] = useMutation(UpdateCampaignDocument);
  const state = campaign ? updateState : createState;
  const errors = fieldErrors(state.error);

  // What the preview renders: each channel's text as written, or its chosen template's.
  const previewTexts: PreviewText[] = channels.map((channel) => {
    const m = messages[channel];
    const template = m.templateId ? templates.find((t) => t._id === m.templateId) : undefined;
    return template ? { channel, subject: template.subject ?? '', content: template.content } : { channel, subject: m.subject, content: m.content };
  });

  const atLocalTime = hasLocalTime(type) && timing === 'local';
  // The local send time the form means (the wall-clock value as typed, no offset), '' for none.
  const local = atLocalTime ? localAt : '';
  const sendingHours = hasSendingHours(type) ? hoursOf(ownHours) : null;
  // Turned on before any time was changed, its own hours start as the organization's, which they replace.
  const changeOwnHours = (h: HoursDraft) => {
    const untouched = ownHours.from === initialHours.from && ownHours.until === initialHours.until;
    setOwnHours(h.on && !ownHours.on && untouched && !campaign?.sendingHours && organizationHours ? { ...hoursDraftOf(organizationHours), on: true } : h);
  };

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const messageInputs = Object.fromEntries(channels.map((c) => [c, messageInput(c, messages[c])]));
    if (campaign) {
      const input = {
        name,
        messages: messageInputs,
        // A local send time sets the start itself; given up (null), the start time below takes over.
        ...(local !== initialLocal ? { localSendAt: local || null } : {}),
        // Only a changed time is sent: for a scheduled campaign, an empty one would start it at once.
        ...(!local && schedule !== initialSchedule ? { scheduleDate: fromLocalInput(schedule) } : {}),
        ...(sendingHours !== hoursOf(initialHours) ? { sendingHours } : {}),
        ...(hasCaps(type) && exempt !== initialExempt ? { exemptFromCaps: exempt } : {}),
        // Likewise the schedule of a recurring or automated campaign: only what was changed.
        ...(type === 'recurring' && (recurrence.rule !== initialRecurrence.rule || recurrence.timezone !== initialRecurrence.timezone)
          ? { recurrence: recurrenceInput(recurrence) }
          : {}),
        ...(type === 'automated' && (trigger.event !== initialTrigger.event || trigger.groupId !== initialTrigger.groupId) ? { trigger: triggerInput(trigger) } : {}),
        ...(type === 'automated' && trigger.delay !== initialTrigger.delay ? { delay: delayInput(trigger) } : {}),
      };
      const result = await update({ id: campaign._id, input });
      if (!result.error) navigate(`/campaigns/${campaign._id}`);
    } else {
      const input = {
        name,
        description: description || null,
        type,
        channels,
        // An automated campaign's audience is whoever meets its trigger.
        ...(type === 'automated' ? {} : { recipients: { groups: groupIds, contacts: contacts.map((c) => c._id), manual } }),
        messages: messageInputs,
        // One or the other: the server refuses both.
        ...(local ? { localSendAt: local } : { scheduleDate: type === 'automated' ? null : fromLocalInput(schedule) }),
        ...(sendingHours ? { sendingHours } : {}),
        ...(hasCaps(type) && exempt ? { exemptFromCaps: true } : {}),
        ...(type === 'recurring' ? { recurrence: recurrenceInput(recurrence) } : {}),
        ...(type === 'automated' ? { trigger: triggerInput(trigger), delay: delayInput(trigger) } : {}),
      };
      const result = await create({ input });
      const created = result.data?.createCampaign;
      if (created) navigate(`/campaigns/${created._id}`);
    }
  };

  return (
    <>
      <PageHeader title={campaign ? `Edit ${campaign.name}` : 'New campaign'} />
      <Grid>
        <Grid.Col span={{ base: 12, md: 7 }}>
          <form onSubmit={submit}>
            <Stack>
              <UnplacedErrors error={state.error} errors={errors} placed={placedFields(channels, type)} />
              <TextInput label="Name" required value={name} onChange={(e) => setName(e.currentTarget.value)} error={errors.name} data-autofocus />
              {campaign ? (
                <FixedFields campaign={campaign} />
              ) : (
                <>
                  <Textarea label="Description" autosize minRows={2} value={description} onChange={(e) => setDescription(e.currentTarget.value)} error={errors.description} />
                  <Select
                    label="Type"
                    required
                    data={Object.entries(TYPE_LABELS).map(([value, label]) => ({ value, label: `${label}: ${TYPE_DESCRIPTIONS[value as CampaignType]}` }))}
                    value={type}
                    onChange={(v) => v && setType(v as CampaignType)}
                    allowDeselect={false}
                    error={errors.type}
                  />
                  <Checkbox.Group label="Channels" description="The campaign sends its message over each channel chosen." required value={channels} onChange={(v) => setChannels(v as Channel[])} error={errors.channels}>
                    <Group mt="xs">
                      {CHANNELS.map((c) => (
                        <Checkbox key={c} value={c} label={CHANNEL_LABELS[c]} />
                      ))}
                    </Group>
                  </Checkbox.Group>
                  {type !== 'automated' && (
                    <Fieldset legend="Audience">
                      <Stack>
                        <Text size="sm">Leave all three empty to send to every contact. Each address gets the message once per channel.</Text>
                        <MultiSelect
                          label="Groups"
                          placeholder={groups.length ? 'Choose groups' : 'No groups yet'}
                          data={groups.map((g) => ({ value: g._id, label: `${g.name} (${formatNumber(g.contactCount)})` }))}
                          value={groupIds}
                          onChange={setGroupIds}
                          searchable
                          error={errors['recipients.groups']}
                        />
                        <ContactPicker label="Contacts" placeholder="Type a name, email or phone" value={contacts} onChange={setContacts} error={errors['recipients.contacts']} />
                        <TagsInput
                          label="Other addresses"
                          description="Emails or phone numbers of people who are not contacts; press Enter after each."
                          value={manual}
                          onChange={setManual}
                          error={errors['recipients.manual']}
                        />
                      </Stack>
                    </Fieldset>
                  )}
                </>
              )}
              {type === 'recurring' && <RecurrenceFields value={recurrence} onChange={setRecurrence} errors={errors} />}
              {type === 'automated' && <TriggerFields value={trigger} onChange={setTrigger} groups={groups} errors={errors} />}
              {channels.map((c) => (
                <MessageFields key={c} channel={c} value={messages[c]} onChange={(m) => setMessages((all) => ({ ...all, [c]: m }))} templates={templates} errors={errors} />
              ))}
              {hasLocalTime(type) && (
                <Radio.Group label="When to send" value={timing} onChange={(v) => setTiming(v as Timing)}>
                  <Stack gap="xs" mt="xs">
                    <Radio value="start" label="At one time for everyone" />
                    <Radio value="local" label="At a local time for each recipient" />
                  </Stack>
                </Radio.Group>
              )}
              {/* An automated campaign answers its trigger from launch: it has no start time. */}
              {type !== 'automated' && !atLocalTime && (
                <TextInput
                  type="datetime-local"
                  label="Start at"
                  description={`${START_HELP[type]} Your time zone: ${timeZone}.`}
                  value={schedule}
                  onChange={(e) => setSchedule(e.currentTarget.value)}
                  error={errors.scheduleDate}
                />
              )}
              {atLocalTime && (
                <TextInput
                  type="datetime-local"
                  label="Local send time"
                  description="Each recipient gets it at this date and time on their own clock, in their time zone. Sending starts where the time comes first (UTC+14) and ends 26 hours later, where it comes last."
                  required
                  value={localAt}
                  onChange={(e) => setLocalAt(e.currentTarget.value)}
                  error={errors.localSendAt}
                />
              )}
              {hasSendingHours(type) && (
                <SendingHoursFields
                  label="Own sending hours"
                  description={`Only between these times in each recipient's time zone (a window ending before it starts crosses midnight). Off: the organization's sending hours, ${
                    organizationHours ? hoursInWords(organizationHours) : 'none at the moment (any time)'
                  }.`}
                  value={ownHours}
                  onChange={changeOwnHours}
                  error={errors.sendingHours}
                />
              )}
              {hasCaps(type) && (
                <Switch
                  label="Exempt from frequency caps"
                  description={`A service notice everyone must get: sent whatever the caps, and it does not count against them either. ${capsNow}`}
                  checked={exempt}
                  onChange={(e) => setExempt(e.currentTarget.checked)}
                  error={errors.exemptFromCaps}
                />
              )}
              <Group justify="flex-end">
                <Button variant="default" component={Link} to={campaign ? `/campaigns/${campaign._id}` : '/campaigns'}>
                  Cancel
                </Button>
                <Button type="submit" loading={state.fetching}>
                  {campaign ? 'Save campaign' : 'Create campaign'}
                </Button>
              </Group>
            </Stack>
          </form>
        </Grid.Col>
        <Grid.Col span={{ base: 12, md: 5 }}>
          {/* Beside the form as it scrolls, scrolling on its own when taller than the window. */}
          <Box pos="sticky" top={72} mah="calc(100vh - 88px)" style={{ overflowY: 'auto' }}>
            <ComposePreviewCard texts={previewTexts} campaignName={name} />
          </Box>
        </Grid.Col>
      </Grid>
    </>
  );
}

/** The fields this form puts the server's messages next to. */
function placedFields(channels: Channel[], type: CampaignType): Set<string> {
  const fields = ['name', 'description', 'type', 'channels', 'recipients.groups', 'recipients.contacts', 'recipients.manual', 'scheduleDate'];
  if (hasLocalTime(type)) fields.push('localSendAt');
  if (hasSendingHours(type)) fields.push('sendingHours');
  if (hasCaps(type)) fields.push('exemptFromCaps');
  if (type === 'recurring') fields.push('recurrence', 'recurrence.rule', 'recurrence.timezone');
  if (type === 'automated') fields.push('trigger', 'trigger.event', 'trigger.groupId', 'delay');
  for (const c of channels) fields.push(`messages.${c}`, `messages.${c}.content`, `messages.${c}.subject`, `messages.${c}.templateId`);
  return new Set(fields);
}

/** The server's error when it names no field of the form (or none at all), so nothing goes unsaid. */
function UnplacedErrors({ error, errors, placed }: { error: CombinedError | undefined; errors: Record<string, string>; placed: Set<string> }) {
  const entries = Object.entries(errors);
  if (!entries.length) return <ErrorAlert error={error} />;
  const rest = entries.filter(([field]) => !placed.has(field));
  if (!rest.length) return null;
  return (
    <Alert color="red" title="Please check the campaign" role="alert">
      <List>
        {rest.map(([field, message]) => (
          <List.Item key={field}>{message}</List.Item>
        ))}
      </List>
    </Alert>
  );
}

/** What a created campaign keeps: its type, channels, description and audience. */
function FixedFields({ campaign }: { campaign: CampaignFieldsFragment }) {
  const audience =
    campaign.type === 'automated'
      ? 'each contact that meets its trigger'
      : campaign.recipientType === 'all'
        ? 'every contact'
        : [
            campaign.selectedGroups.length && plural(campaign.selectedGroups.length, 'group', 'groups'),
            campaign.selectedContacts.length && plural(campaign.selectedContacts.length, 'contact', 'contacts'),
            campaign.manualRecipients.length && plural(campaign.manualRecipients.length, 'other address', 'other addresses'),
          ]
            .filter(Boolean)
            .join(', ');
  return (
    <Text size="sm">
      {TYPE_LABELS[campaign.type]} campaign over {channelList(campaign.channels)} to {audience}. The type, channels, description and audience stay as created.
    </Text>
  );
}
