import { Alert, Box, Button, Checkbox, Fieldset, Grid, Group, List, MultiSelect, Select, Stack, TagsInput, Text, TextInput, Textarea } from '@mantine/core';
import { useState, type FormEvent } from 'react';
import { Link, useNavigate, useParams } from 'react-router';
import { useMutation, useQuery, type CombinedError } from 'urql';
import { ContactPicker, type ContactOption } from '../../components/ContactPicker';
import { ErrorAlert } from '../../components/ErrorAlert';
import { PageHeader } from '../../components/PageHeader';
import { PageLoader } from '../../components/PageLoader';
import { graphql } from '../../gql';
import type { CampaignFieldsFragment, CampaignType, Channel } from '../../gql/graphql';
import { fieldErrors } from '../../lib/errors';
import { formatNumber } from '../../lib/format';
import { useMe } from '../../lib/me';
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

/** What the form offers to choose from: the groups (audience) and the saved templates (messages). */
const CampaignFormChoices = graphql(`
  query CampaignFormChoices {
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
  const initialSchedule = toLocalInput(campaign?.scheduleDate);
  const [schedule, setSchedule] = useState(initialSchedule);
  const [initialRecurrence] = useState(() => recurrenceDraftOf(campaign));
  const [recurrence, setRecurrence] = useState(initialRecurrence);
  const [initialTrigger] = useState(() => triggerDraftOf(campaign));
  const [trigger, setTrigger] = useState(initialTrigger);

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

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const messageInputs = Object.fromEntries(channels.map((c) => [c, messageInput(c, messages[c])]));
    if (campaign) {
      const input = {
        name,
        messages: messageInputs,
        // Only a changed time is sent: for a scheduled campaign, an empty one would start it at once.
        ...(schedule !== initialSchedule ? { scheduleDate: fromLocalInput(schedule) } : {}),
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
        scheduleDate: type === 'automated' ? null : fromLocalInput(schedule),
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
              {/* An automated campaign answers its trigger from launch: it has no start time. */}
              {type !== 'automated' && (
                <TextInput
                  type="datetime-local"
                  label="Start at"
                  description={`${START_HELP[type]} Your time zone: ${timeZone}.`}
                  value={schedule}
                  onChange={(e) => setSchedule(e.currentTarget.value)}
                  error={errors.scheduleDate}
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
