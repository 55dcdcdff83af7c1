import { Button, Group, Loader, Modal, Stack, Text, TextInput } from '@mantine/core';
import { useState, type FormEvent } from 'react';
import { Link } from 'react-router';
import { useClient, useMutation, useQuery } from 'urql';
import { ErrorAlert } from '../../components/ErrorAlert';
import { graphql } from '../../gql';
import type { CampaignFieldsFragment } from '../../gql/graphql';
import { fieldErrors } from '../../lib/errors';
import { formatDateTime } from '../../lib/format';
import { MeQuery } from '../../lib/me';
import { CampaignEstimateDocument, EstimateSummary } from './CampaignEstimateCard';
import { fromLocalInput, timeZone } from './campaign-fields';
import { formatWallClock } from './schedule-words';

const LaunchCampaignDocument = graphql(`
  mutation CampaignPageLaunch($id: ID!) {
    launchCampaign(id: $id) {
      ...CampaignFields
    }
  }
`);

const CancelCampaignDocument = graphql(`
  mutation CampaignPageCancel($id: ID!) {
    cancelCampaign(id: $id) {
      ...CampaignFields
    }
  }
`);

const ScheduleCampaignDocument = graphql(`
  mutation CampaignPageSchedule($id: ID!, $input: UpdateCampaignInput!) {
    updateCampaign(id: $id, input: $input) {
      ...CampaignFields
    }
  }
`);

const ResendEstimateDocument = graphql(`
  query CampaignPageResendEstimate($id: ID!) {
    campaignResendEstimate(id: $id) {
      channels {
        channel
        recipients
      }
      recipients
      suppressed
      cost
      balance
    }
  }
`);

const ResendFailedDocument = graphql(`
  mutation CampaignPageResendFailed($id: ID!) {
    resendFailedCampaign(id: $id) {
      runs {
        _id
        status
        recipients
      }
      campaign {
        ...CampaignFields
      }
    }
  }
`);

type Dialog = 'launch' | 'schedule' | 'cancel' | 'resend' | null;

const isFuture = (iso: string | null | undefined) => !!iso && new Date(iso).getTime() > Date.now();

/**
 * An admin's actions on a campaign, by status: a draft is edited, scheduled or launched; a scheduled
 * one edited or canceled; an active one canceled; a completed one-off campaign with failed
 * recipients resent to them. Each asks first, in a dialog.
 */
export function CampaignActions({ campaign }: { campaign: CampaignFieldsFragment }) {
  const [dialog, setDialog] = useState<Dialog>(null);
  const close = () => setDialog(null);
  const { status } = campaign;
  return (
    <>
      {(status === 'draft' || status === 'scheduled') && (
        <Button variant="default" component={Link} to={`/campaigns/${campaign._id}/edit`}>
          Edit campaign
        </Button>
      )}
      {status === 'draft' && (
        <>
          {/* An automated campaign answers its trigger from launch: it has no start time. One sent at a
              local time has the start that time gives it (a launch schedules it); a start time would replace it. */}
          {campaign.type !== 'automated' && !campaign.localSendAt && (
            <Button variant="default" onClick={() => setDialog('schedule')}>
              Schedule campaign
            </Button>
          )}
          <Button onClick={() => setDialog('launch')}>Launch campaign</Button>
        </>
      )}
      {(status === 'scheduled' || status === 'active') && (
        <Button color="red" variant="outline" onClick={() => setDialog('cancel')}>
          Cancel campaign
        </Button>
      )}
      {status === 'completed' && campaign.type === 'broadcast' && campaign.analytics.failed > 0 && (
        <Button variant="default" onClick={() => setDialog('resend')}>
          Resend to failed
        </Button>
      )}
      {dialog === 'resend' && <ResendDialog campaign={campaign} onClose={close} />}
      {dialog === 'launch' && <LaunchDialog campaign={campaign} onClose={close} />}
      {dialog === 'schedule' && <ScheduleDialog campaign={campaign} onClose={close} />}
      {dialog === 'cancel' && <CancelDialog campaign={campaign} onClose={close} />}
    </>
  );
}

/** What launching does, by type. */
function launchEffect(campaign: CampaignFieldsFragment, later: boolean): string {
  if (campaign.type === 'automated') return 'It starts answering its trigger: each contact that meets it gets the message once, after the delay. It stays active until canceled.';
  if (campaign.type === 'recurring') {
    return `It runs ${campaign.recurrence?.summary ?? 'on its schedule'}: each run sends to the audience as it is then and reserves its cost then (the estimate is for a run now). It stays active until canceled.`;
  }
  if (campaign.localSendAt) {
    const start = later ? `it will start by itself on ${formatDateTime(campaign.scheduleDate)}, where that time comes first` : 'it starts now where that time has come, the others waiting for it';
    return `Each recipient gets it at ${formatWallClock(campaign.localSendAt)} on their own clock: ${start}. It can be canceled until it has sent.`;
  }
  return later
    ? `It will start by itself on ${formatDateTime(campaign.scheduleDate)}, and can be canceled until it has sent.`
    : 'It starts sending now; its audience is fixed and its cost reserved.';
}

/** Launch: what it would send and cost, then sent now (or at its start time, when that is ahead). */
function LaunchDialog({ campaign, onClose }: { campaign: CampaignFieldsFragment; onClose: () => void }) {
  // An automated campaign's audience is whoever meets its trigger later: nothing to estimate now.
  const automated = campaign.type === 'automated';
  const [{ data, error: estimateError }] = useQuery({
    query: CampaignEstimateDocument,
    variables: { id: campaign._id },
    requestPolicy: 'network-only',
    pause: automated,
  });
  const [state, launch] = useMutation(LaunchCampaignDocument);
  const client = useClient();
  const later = isFuture(campaign.scheduleDate);
  const submit = async () => {
    const result = await launch({ id: campaign._id });
    if (result.error) return;
    // A launch reserves the campaign's cost: the balance the header shows changed.
    void client.query(MeQuery, {}, { requestPolicy: 'network-only' }).toPromise();
    onClose();
  };
  return (
    <Modal opened onClose={onClose} closeButtonProps={{ 'aria-label': 'Close' }} title={`Launch ${campaign.name}?`}>
      <Stack>
        <ErrorAlert error={state.error} title="The campaign was not launched" />
        <ErrorAlert error={estimateError} title="The estimate failed" />
        {!automated && (data ? <EstimateSummary estimate={data.campaignEstimate} /> : !estimateError && <Loader size="sm" role="status" aria-label="Loading" />)}
        <Text>{launchEffect(campaign, later)}</Text>
        <Group justify="flex-end">
          <Button variant="default" onClick={onClose}>
            Keep as draft
          </Button>
          <Button onClick={submit} loading={state.fetching} data-autofocus>
            {later && campaign.type !== 'recurring' ? 'Schedule launch' : 'Launch now'}
          </Button>
        </Group>
      </Stack>
    </Modal>
  );
}

/** Schedule: a start time, set on the draft, then launched (the campaign waits as `scheduled`). */
function ScheduleDialog({ campaign, onClose }: { campaign: CampaignFieldsFragment; onClose: () => void }) {
  const [startAt, setStartAt] = useState('');
  const [updateState, update] = useMutation(ScheduleCampaignDocument);
  const [launchState, launch] = useMutation(LaunchCampaignDocument);
  const errors = fieldErrors(updateState.error);
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const updated = await update({ id: campaign._id, input: { scheduleDate: fromLocalInput(startAt) } });
    if (updated.error) return;
    const launched = await launch({ id: campaign._id });
    if (!launched.error) onClose();
  };
  return (
    <Modal opened onClose={onClose} closeButtonProps={{ 'aria-label': 'Close' }} title={`Schedule ${campaign.name}`}>
      <form onSubmit={submit}>
        <Stack>
          {!errors.scheduleDate && <ErrorAlert error={updateState.error ?? launchState.error} title="The campaign was not scheduled" />}
          <TextInput
            type="datetime-local"
            label="Start at"
            description={`The campaign starts sending by itself at this time (your time zone: ${timeZone}); a time already past starts it now.`}
            required
            value={startAt}
            onChange={(e) => setStartAt(e.currentTarget.value)}
            error={errors.scheduleDate}
            data-autofocus
          />
          <Group justify="flex-end">
            <Button variant="default" onClick={onClose}>
              Keep as draft
            </Button>
            <Button type="submit" loading={updateState.fetching || launchState.fetching}>
              Schedule launch
            </Button>
          </Group>
        </Stack>
      </form>
    </Modal>
  );
}

/** Cancel: recipients not yet sent stay unsent, and their reserved credits come back. */
function CancelDialog({ campaign, onClose }: { campaign: CampaignFieldsFragment; onClose: () => void }) {
  const [state, cancel] = useMutation(CancelCampaignDocument);
  const submit = async () => {
    const result = await cancel({ id: campaign._id });
    if (!result.error) onClose();
  };
  return (
    <Modal opened onClose={onClose} closeButtonProps={{ 'aria-label': 'Close' }} title={`Cancel ${campaign.name}?`}>
      <Stack>
        <ErrorAlert error={state.error} title="The campaign was not canceled" />
        <Text>
          {campaign.status === 'scheduled'
            ? 'It will not start. A canceled campaign cannot be launched again.'
            : 'Recipients not yet sent stay unsent, and their reserved credits are released. A canceled campaign cannot be launched again.'}
        </Text>
        <Group justify="flex-end">
          <Button variant="default" onClick={onClose} data-autofocus>
            Keep campaign
          </Button>
          <Button color="red" onClick={submit} loading={state.fetching}>
            Cancel campaign now
          </Button>
        </Group>
      </Stack>
    </Modal>
  );
}

/**
 * Resend to the failed: whom it would reach (the failures worth another try, less those who
 * unsubscribed since) and what it costs, then sent now as runs of the campaign.
 */
function ResendDialog({ campaign, onClose }: { campaign: CampaignFieldsFragment; onClose: () => void }) {
  const [{ data, error: estimateError }] = useQuery({ query: ResendEstimateDocument, variables: { id: campaign._id }, requestPolicy: 'network-only' });
  const [state, resend] = useMutation(ResendFailedDocument);
  const client = useClient();
  const estimate = data?.campaignResendEstimate;
  const submit = async () => {
    const result = await resend({ id: campaign._id });
    if (result.error) return;
    void client.query(MeQuery, {}, { requestPolicy: 'network-only' }).toPromise();
    onClose();
  };
  return (
    <Modal opened onClose={onClose} closeButtonProps={{ 'aria-label': 'Close' }} title={`Resend ${campaign.name} to its failed recipients?`}>
      <Stack>
        <ErrorAlert error={state.error} title="The campaign was not resent" />
        <ErrorAlert error={estimateError} title="The estimate failed" />
        {!estimate && !estimateError && <Loader size="sm" role="status" aria-label="Loading" />}
        {estimate && (
          <Text>
            {estimate.recipients === 0
              ? 'No recipient failed for a reason worth another try: invalid numbers and addresses, and final answers from the provider, are not resent.'
              : `${estimate.recipients} recipients (${estimate.channels.map((c) => `${c.recipients} by ${c.channel === 'sms' ? 'SMS' : c.channel === 'whatsapp' ? 'WhatsApp' : 'email'}`).join(', ')}) get the campaign again, costing ${estimate.cost} credits of your ${estimate.balance}. Invalid addresses, final answers from the provider and contacts who unsubscribed since${estimate.suppressed ? ` (${estimate.suppressed})` : ''} are left out.`}
          </Text>
        )}
        <Group justify="flex-end">
          <Button variant="default" onClick={onClose}>
            Keep as it is
          </Button>
          <Button onClick={submit} loading={state.fetching} disabled={!estimate || estimate.recipients === 0} data-autofocus>
            Resend now
          </Button>
        </Group>
      </Stack>
    </Modal>
  );
}
