import { Button, Checkbox, Group, Modal, SimpleGrid, Stack, Switch, TextInput, Textarea } from '@mantine/core';
import { useState, type FormEvent } from 'react';
import { useMutation } from 'urql';
import { ErrorAlert } from '../../components/ErrorAlert';
import { graphql } from '../../gql';
import type { WebhookEventType } from '../../gql/graphql';
import { fieldErrors } from '../../lib/errors';
import { EVENT_TYPES, eventTypeOf } from './webhook-types';

export const WEBHOOK_ENDPOINT_FIELDS = graphql(`
  fragment WebhookEndpointFields on WebhookEndpoint {
    _id
    url
    description
    eventTypes
    enabled
    disabledReason
    lastSuccessAt
    lastFailureAt
    failingSince
    failuresInARow
    createdAt
    updatedAt
  }
`);

const WebhookCreateEndpoint = graphql(`
  mutation WebhookCreateEndpoint($input: CreateWebhookEndpointInput!) {
    createWebhookEndpoint(input: $input) {
      secret
      endpoint {
        ...WebhookEndpointFields
      }
    }
  }
`);

const WebhookUpdateEndpoint = graphql(`
  mutation WebhookUpdateEndpoint($id: ID!, $input: UpdateWebhookEndpointInput!) {
    updateWebhookEndpoint(id: $id, input: $input) {
      ...WebhookEndpointFields
    }
  }
`);

export interface EditableEndpoint {
  _id: string;
  url: string;
  description?: string | null;
  eventTypes: string[];
}

/**
 * Registers an endpoint (no `endpoint`) or changes one, in a dialog. A new endpoint's signing
 * secret goes to `onCreated`: the answer to this mutation is the only place it appears.
 */
export function WebhookEndpointForm({
  endpoint,
  onClose,
  onCreated,
}: {
  endpoint: EditableEndpoint | null;
  onClose: () => void;
  onCreated?: (created: { id: string; url: string; secret: string }) => void;
}) {
  const [url, setUrl] = useState(endpoint?.url ?? '');
  const [description, setDescription] = useState(endpoint?.description ?? '');
  const [eventTypes, setEventTypes] = useState<string[]>(endpoint?.eventTypes.map(eventTypeOf) ?? []);
  const [enabled, setEnabled] = useState(true);
  const [createState, create] = useMutation(WebhookCreateEndpoint);
  const [updateState, update] = useMutation(WebhookUpdateEndpoint);
  const state = endpoint ? updateState : createState;
  const errors = fieldErrors(state.error);

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const types = eventTypes as WebhookEventType[];
    if (endpoint) {
      const result = await update({ id: endpoint._id, input: { url, description: description || null, eventTypes: types } });
      if (!result.error) onClose();
    } else {
      const result = await create({ input: { url, description: description || null, eventTypes: types, enabled } });
      const created = result.data?.createWebhookEndpoint;
      if (created) onCreated?.({ id: created.endpoint._id, url: created.endpoint.url, secret: created.secret });
    }
  };
  return (
    <Modal opened onClose={onClose} closeButtonProps={{ 'aria-label': 'Close' }} title={endpoint ? `Edit ${endpoint.url}` : 'New webhook endpoint'} size="lg">
      <form onSubmit={submit}>
        <Stack>
          {!Object.keys(errors).length && <ErrorAlert error={state.error} />}
          <TextInput
            label="URL"
            required
            type="url"
            placeholder="https://example.com/herald-events"
            description="Herald posts each event here, signed the Standard Webhooks way."
            value={url}
            onChange={(e) => setUrl(e.currentTarget.value)}
            error={errors.url}
            data-autofocus
          />
          <Textarea label="Description" description="What it is for." value={description} onChange={(e) => setDescription(e.currentTarget.value)} error={errors.description} />
          <Checkbox.Group label="Event types" description="The events to post to it; none checked means every type." value={eventTypes} onChange={setEventTypes} error={errors.eventTypes}>
            <SimpleGrid cols={{ base: 1, sm: 2 }} mt="xs" spacing="xs">
              {EVENT_TYPES.map((t) => (
                <Checkbox key={t.value} value={t.value} label={t.wire} description={t.description} />
              ))}
            </SimpleGrid>
          </Checkbox.Group>
          {!endpoint && <Switch label="Deliver events to it from now on" checked={enabled} onChange={(e) => setEnabled(e.currentTarget.checked)} error={errors.enabled} />}
          <Group justify="flex-end">
            <Button variant="default" onClick={onClose}>
              Cancel
            </Button>
            <Button type="submit" loading={state.fetching}>
              {endpoint ? 'Save endpoint' : 'Create endpoint'}
            </Button>
          </Group>
        </Stack>
      </form>
    </Modal>
  );
}
