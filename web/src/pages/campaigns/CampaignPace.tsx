import { Badge, Stack, Text, Tooltip } from '@mantine/core';
import { useEffect, useState } from 'react';
import { formatRate, formatRelative, formatTimeSoon } from '../../lib/format';

/** How an active campaign is being sent, as `Campaign` and its `campaignProgress` events have it. */
export interface Pace {
  throttled: boolean;
  sendRate?: number | null;
  estimatedCompletionAt?: string | null;
}

const THROTTLED_HINT = 'Waiting for the channel’s rate';

/** Shown while sending waits for a channel credential's rate (yellow, dark text: AA contrast). */
export function ThrottledBadge() {
  return (
    <Tooltip label={THROTTLED_HINT} withArrow>
      <Badge color="yellow.5" autoContrast variant="filled">
        Throttled
      </Badge>
    </Tooltip>
  );
}

/** The time now, again every `ms` while the component is shown (for wording relative to it). */
function useNow(ms: number): number {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    const timer = setInterval(() => setNow(Date.now()), ms);
    return () => clearInterval(timer);
  }, [ms]);
  return now;
}

/**
 * An active campaign's pace: recipients settled a second, when the rest should be done, and, when
 * throttled, why it goes no faster.
 */
export function PaceLines({ pace }: { pace: Pace }) {
  const now = useNow(1000);
  const eta = pace.estimatedCompletionAt;
  const due = eta ? new Date(eta).getTime() - now : null;
  return (
    <Stack gap={2} role="group" aria-label="Sending pace">
      <Text size="sm">
        <Text span fw={600} size="sm">
          Pace:
        </Text>{' '}
        {pace.sendRate != null ? formatRate(pace.sendRate) : 'measuring…'}
      </Text>
      <Text size="sm">
        <Text span fw={600} size="sm">
          Estimated finish:
        </Text>{' '}
        {eta && due !== null ? `${formatTimeSoon(eta, now)} (${due > 0 ? formatRelative(eta, now) : 'any moment now'})` : 'not known yet'}
      </Text>
      {pace.throttled && (
        <Text size="sm">
          {THROTTLED_HINT}: sending goes no faster than the messages a second set for the channel, and slower while its provider answers
          with throttling.
        </Text>
      )}
    </Stack>
  );
}
