import { Group, Input, Stack, Switch, TextInput } from '@mantine/core';
import type { ReactNode } from 'react';

/**
 * Sending hours as a form holds them: whether they are set, and their from and until times
 * (`HH:MM`, as a time input gives them).
 */
export interface HoursDraft {
  on: boolean;
  from: string;
  until: string;
}

/** A window the switch offers when turned on with nothing set yet: `fallback`, else a working day. */
const DEFAULT_WINDOW = '08:00-20:00';

/** The draft of saved hours (`HH:MM-HH:MM`, null for none); off, it still holds `fallback` to offer. */
export function hoursDraftOf(hours: string | null | undefined, fallback?: string | null): HoursDraft {
  const shown = hours ?? fallback ?? DEFAULT_WINDOW;
  return { on: !!hours, from: shown.slice(0, 5), until: shown.slice(6) };
}

/**
 * The value to send: `HH:MM-HH:MM` when on (as typed: the server says what is wrong with it, such as
 * a missing time or a start equal to the end), null when off.
 */
export const hoursOf = (draft: HoursDraft): string | null => (draft.on ? `${draft.from}-${draft.until}` : null);

/** A window in words: `08:00–20:00`. */
export const hoursInWords = (hours: string) => hours.replace('-', '–');

interface Props {
  /** The switch's label. */
  label: string;
  description?: ReactNode;
  value: HoursDraft;
  onChange: (value: HoursDraft) => void;
  /** The server's message for `sendingHours`, shown under both times (it is about the pair). */
  error?: string;
  disabled?: boolean;
}

/**
 * Sending hours: a switch, and while it is on the from and until times side by side (24-hour
 * values whatever the browser's clock shows), the server's message for the window under both.
 */
export function SendingHoursFields({ label, description, value, onChange, error, disabled }: Props) {
  return (
    <Stack gap="sm">
      <Switch label={label} description={description} checked={value.on} disabled={disabled} onChange={(e) => onChange({ ...value, on: e.currentTarget.checked })} />
      {value.on && (
        // A group named for screen readers; its error is the window's, so each time is marked invalid.
        <Input.Wrapper error={error} role="group" aria-label={label} ml={{ base: 0, xs: 50 }}>
          <Group gap="md" align="flex-start">
            <TextInput type="time" label="From" required value={value.from} onChange={(e) => onChange({ ...value, from: e.currentTarget.value })} error={!!error} disabled={disabled} w={150} />
            <TextInput type="time" label="Until" required value={value.until} onChange={(e) => onChange({ ...value, until: e.currentTarget.value })} error={!!error} disabled={disabled} w={150} />
          </Group>
        </Input.Wrapper>
      )}
    </Stack>
  );
}
