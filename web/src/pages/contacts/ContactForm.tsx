import { Button, Fieldset, Group, Modal, MultiSelect, Radio, SimpleGrid, Stack, TagsInput, TextInput } from '@mantine/core';
import { useState, type FormEvent } from 'react';
import { useMutation, useQuery } from 'urql';
import { ErrorAlert } from '../../components/ErrorAlert';
import { TimeZoneSelect } from '../../components/TimeZoneSelect';
import type { Channel, ContactFieldsFragment, ContactSubscriptionsInput, SubscriptionStatus, UpdateContactInput } from '../../gql/graphql';
import { fieldErrors } from '../../lib/errors';
import { AttributesEditor } from './AttributesEditor';
import { attributesOf, changeOf, newRow, rowsOf, type AttributeRow } from './attributes';
import { CreateContact, GroupOptions, UpdateContact } from './documents';
import { alertNeeded, CHANNELS, errorFor } from './fields';

/** The fields this form has a control for: a server message naming another shows as a whole. */
const FIELDS = ['name', 'email', 'phone', 'countryCode', 'organization', 'timezone', 'tags', 'groups', 'attributes', 'subscriptions.email', 'subscriptions.sms', 'subscriptions.whatsapp'];

type Consent = Record<Channel, SubscriptionStatus>;

const sameList = (a: readonly string[], b: readonly string[]) => a.length === b.length && a.every((x, i) => x === b[i]);

interface Props {
  /** The contact to edit; a new one when null. */
  contact: ContactFieldsFragment | null;
  /** Groups the new contact starts in (the group the list is filtered by). */
  initialGroups?: string[];
  onClose: () => void;
  /** Called with the saved contact. */
  onSaved?: (contact: ContactFieldsFragment) => void;
}

/**
 * Create or edit a contact, in a dialog: its addresses, tags, groups, attributes and consent. An
 * edit sends only what changed (the API keeps the rest), attributes as the merge the API makes.
 */
export function ContactForm({ contact, initialGroups = [], onClose, onSaved }: Props) {
  const [name, setName] = useState(contact?.name ?? '');
  const [email, setEmail] = useState(contact?.email ?? '');
  const [phone, setPhone] = useState(contact?.phone ?? '');
  const [countryCode, setCountryCode] = useState(contact?.countryCode ?? '');
  const [organization, setOrganization] = useState(contact?.organization ?? '');
  const [timezone, setTimezone] = useState<string | null>(contact?.timezone ?? null);
  const [tags, setTags] = useState<string[]>(contact?.tags ?? []);
  const [groups, setGroups] = useState<string[]>(contact?.groupIds ?? initialGroups);
  const [rows, setRows] = useState<AttributeRow[]>(() => (contact ? rowsOf(contact.attributes) : [newRow()]));
  const storedConsent: Consent = {
    email: contact?.subscriptions.email.status ?? 'subscribed',
    sms: contact?.subscriptions.sms.status ?? 'subscribed',
    whatsapp: contact?.subscriptions.whatsapp.status ?? 'subscribed',
  };
  const [consent, setConsent] = useState<Consent>(storedConsent);

  const [{ data: groupData }] = useQuery({ query: GroupOptions });
  const groupOptions = (groupData?.groups.edges ?? []).map(({ node }) => ({ value: node._id, label: node.name }));
  // A group of the contact beyond the first page of options still shows by its name.
  for (const g of contact?.groups ?? []) if (!groupOptions.some((o) => o.value === g._id)) groupOptions.push({ value: g._id, label: g.name });

  const [createState, create] = useMutation(CreateContact);
  const [updateState, update] = useMutation(UpdateContact);
  const state = contact ? updateState : createState;
  const errors = fieldErrors(state.error);

  const consentChange = (): ContactSubscriptionsInput | undefined => {
    const change: ContactSubscriptionsInput = {};
    for (const { value } of CHANNELS) if (consent[value] !== storedConsent[value]) change[value] = consent[value];
    return Object.keys(change).length ? change : undefined;
  };

  /** An edit's changed fields: a cleared address is sent as null, for the server to judge. */
  const updateInput = (stored: ContactFieldsFragment): UpdateContactInput => {
    const input: UpdateContactInput = {};
    const text = (value: string, was: string | null) => (value === (was ?? '') ? undefined : value === '' ? null : value);
    if (name !== stored.name) input.name = name;
    input.email = text(email, stored.email);
    input.phone = text(phone, stored.phone);
    input.countryCode = text(countryCode, stored.countryCode);
    input.organization = text(organization, stored.organization);
    if (timezone !== (stored.timezone ?? null)) input.timezone = timezone;
    if (!sameList(tags, stored.tags)) input.tags = tags;
    if (!sameList(groups, stored.groupIds)) input.groups = groups;
    input.attributes = changeOf(stored.attributes, rows);
    input.subscriptions = consentChange();
    return Object.fromEntries(Object.entries(input).filter(([, v]) => v !== undefined));
  };

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const result = contact
      ? await update({ id: contact._id, input: updateInput(contact) })
      : await create({
          input: {
            name,
            email: email || undefined,
            phone: phone || undefined,
            countryCode: countryCode || undefined,
            organization: organization || undefined,
            timezone: timezone ?? undefined,
            tags,
            groups,
            attributes: attributesOf(rows),
            subscriptions: consentChange(),
          },
        });
    if (result.error) return;
    const saved = result.data && ('createContact' in result.data ? result.data.createContact : result.data.updateContact);
    if (saved) onSaved?.(saved);
    onClose();
  };

  return (
    <Modal opened onClose={onClose} closeButtonProps={{ 'aria-label': 'Close dialog' }} title={contact ? `Edit ${contact.name}` : 'New contact'} size="xl">
      <form onSubmit={submit}>
        <Stack>
          {alertNeeded(errors, FIELDS) && <ErrorAlert error={state.error} />}
          <TextInput label="Name" required value={name} onChange={(e) => setName(e.currentTarget.value)} error={errors.name} data-autofocus />
          <SimpleGrid cols={{ base: 1, sm: 2 }}>
            <TextInput
              label="Email"
              inputMode="email"
              autoComplete="off"
              description="An email, a phone or both"
              value={email}
              onChange={(e) => setEmail(e.currentTarget.value)}
              error={errors.email}
            />
            <TextInput
              label="Phone"
              type="tel"
              description="International (+254712345678) or national"
              value={phone}
              onChange={(e) => setPhone(e.currentTarget.value)}
              error={errors.phone}
            />
            <TextInput
              label="Country code"
              description="For a national phone: +254 or KE (else your organization's country)"
              value={countryCode}
              onChange={(e) => setCountryCode(e.currentTarget.value)}
              error={errors.countryCode}
            />
            <TextInput label="Company" value={organization} onChange={(e) => setOrganization(e.currentTarget.value)} error={errors.organization} />
            <TimeZoneSelect
              label="Time zone"
              description="Empty: the zone of the phone number's country, else your organization's"
              value={timezone}
              onChange={setTimezone}
              error={errors.timezone}
              clearable
            />
          </SimpleGrid>
          <TagsInput label="Tags" description="Press Enter after each tag" value={tags} onChange={setTags} error={errorFor(errors, 'tags')} />
          <MultiSelect label="Groups" data={groupOptions} value={groups} onChange={setGroups} searchable clearable error={errorFor(errors, 'groups')} nothingFoundMessage="No such group" />
          <AttributesEditor rows={rows} onChange={setRows} existing={!!contact} error={errorFor(errors, 'attributes')} />
          <Fieldset legend="Consent">
            <Stack gap="xs">
              {CHANNELS.map(({ value, label }) => (
                <Radio.Group
                  key={value}
                  label={`${label} consent`}
                  value={consent[value]}
                  onChange={(v) => setConsent((c) => ({ ...c, [value]: v as SubscriptionStatus }))}
                  error={errorFor(errors, `subscriptions.${value}`)}
                >
                  <Group mt={4}>
                    <Radio value="subscribed" label="Subscribed" />
                    <Radio value="unsubscribed" label="Unsubscribed" />
                  </Group>
                </Radio.Group>
              ))}
            </Stack>
          </Fieldset>
          <Group justify="flex-end">
            <Button variant="default" onClick={onClose}>
              Cancel
            </Button>
            <Button type="submit" loading={state.fetching}>
              {contact ? 'Save contact' : 'Create contact'}
            </Button>
          </Group>
        </Stack>
      </form>
    </Modal>
  );
}
