import { Group, Input, NumberInput, Stack, Switch, Text, VisuallyHidden } from '@mantine/core';
import type { Channel, FrequencyCapsInput } from '../../gql/graphql';
import { CHANNELS, CHANNEL_LABELS } from '../campaigns/campaign-fields';

/** A channel's cap as the server has it. */
interface Cap {
  messages: number;
  days: number;
}

/** The caps as the server answers them: null (or absent) for a channel that is not capped. */
export type SavedCaps = Partial<Record<Channel, Cap | null>>;

/**
 * A channel's cap as the form holds it: whether it is on, and its figures as the number inputs give
 * them (a number, or '' while empty); off, it keeps the figures to offer when turned on again.
 */
export interface CapDraft {
  on: boolean;
  messages: number | string;
  days: number | string;
}

export type CapsDraft = Record<Channel, CapDraft>;

/** What a switch turned on with nothing saved offers: 3 messages a week. */
const DEFAULT_CAP: Cap = { messages: 3, days: 7 };

/** The drafts of saved caps. */
export function capsDraftOf(saved: SavedCaps | null | undefined): CapsDraft {
  const draft = (c: Channel): CapDraft => {
    const cap = saved?.[c];
    return cap ? { on: true, messages: cap.messages, days: cap.days } : { on: false, ...DEFAULT_CAP };
  };
  return { sms: draft('sms'), email: draft('email'), whatsapp: draft('whatsapp') };
}

const filled = (v: number | string) => v !== '' && Number.isFinite(Number(v));

/**
 * The caps to send: every channel, null when off (the server replaces them all); figures as typed,
 * so the server says what is out of range. Null when a cap that is on has an empty figure (see
 * `missingCapFigures`).
 */
export function capsOf(draft: CapsDraft): FrequencyCapsInput | null {
  const input: FrequencyCapsInput = {};
  for (const c of CHANNELS) {
    const d = draft[c];
    if (!d.on) {
      input[c] = null;
      continue;
    }
    if (!filled(d.messages) || !filled(d.days)) return null;
    input[c] = { messages: Number(d.messages), days: Number(d.days) };
  }
  return input;
}

/** The caps' figures left empty, by field (`frequencyCaps.sms.days`), with what to do about them. */
export function missingCapFigures(draft: CapsDraft): Record<string, string> {
  const missing: Record<string, string> = {};
  for (const c of CHANNELS) {
    const d = draft[c];
    if (!d.on) continue;
    if (!filled(d.messages)) missing[`frequencyCaps.${c}.messages`] = 'Enter how many messages';
    if (!filled(d.days)) missing[`frequencyCaps.${c}.days`] = 'Enter how many days';
  }
  return missing;
}

/** Saved caps, or a draft's, as one comparable value (every channel, null when not capped). */
export function capsKey(caps: SavedCaps | FrequencyCapsInput | null | undefined): string {
  return JSON.stringify(CHANNELS.map((c) => (caps?.[c] ? [caps[c]!.messages, caps[c]!.days] : null)));
}

const count = (n: number, one: string, many: string) => `${n} ${n === 1 ? one : many}`;

/** Saved caps in words: `SMS at most 1 message in 7 days, Email at most 2 messages in 1 day`; null for none. */
export function capsInWords(caps: SavedCaps | null | undefined): string | null {
  const set = CHANNELS.flatMap((c) => {
    const cap = caps?.[c];
    return cap ? [`${CHANNEL_LABELS[c]} at most ${count(cap.messages, 'message', 'messages')} in ${count(cap.days, 'day', 'days')}`] : [];
  });
  return set.length ? set.join(', ') : null;
}

interface Props {
  value: CapsDraft;
  onChange: (value: CapsDraft) => void;
  /** Messages by field, as `fieldErrors` gives them (`frequencyCaps.sms.messages`), the server's or the form's own. */
  errors: Record<string, string>;
}

/**
 * The frequency caps: per channel a switch, and while it is on how many messages in how many days
 * (each figure's message under it; a message about the channel's whole cap under both).
 */
export function FrequencyCapsFields({ value, onChange, errors }: Props) {
  return (
    <Stack gap="sm">
      {CHANNELS.map((c) => {
        const label = CHANNEL_LABELS[c];
        const d = value[c];
        const set = (change: Partial<CapDraft>) => onChange({ ...value, [c]: { ...d, ...change } });
        const field = `frequencyCaps.${c}`;
        return (
          <Stack key={c} gap="sm">
            <Switch label={`Cap ${label}`} checked={d.on} onChange={(e) => set({ on: e.currentTarget.checked })} />
            {d.on && (
              <Input.Wrapper error={errors[field]} role="group" aria-label={`${label} cap`} ml={{ base: 0, xs: 50 }}>
                <Group gap="md" align="flex-start">
                  <NumberInput
                    label={
                      <>
                        At most<VisuallyHidden> (messages)</VisuallyHidden>
                      </>
                    }
                    required
                    min={1}
                    max={1000}
                    allowDecimal={false}
                    allowNegative={false}
                    clampBehavior="none"
                    hideControls
                    rightSection={<Unit>messages</Unit>}
                    rightSectionWidth={84}
                    rightSectionPointerEvents="none"
                    value={d.messages}
                    onChange={(v) => set({ messages: v })}
                    error={errors[`${field}.messages`] ?? !!errors[field]}
                    w={170}
                  />
                  <NumberInput
                    label={
                      <>
                        In<VisuallyHidden> (days)</VisuallyHidden>
                      </>
                    }
                    required
                    min={1}
                    max={365}
                    allowDecimal={false}
                    allowNegative={false}
                    clampBehavior="none"
                    hideControls
                    rightSection={<Unit>days</Unit>}
                    rightSectionWidth={56}
                    rightSectionPointerEvents="none"
                    value={d.days}
                    onChange={(v) => set({ days: v })}
                    error={errors[`${field}.days`] ?? !!errors[field]}
                    w={140}
                  />
                </Group>
              </Input.Wrapper>
            )}
          </Stack>
        );
      })}
      {errors.frequencyCaps && <Input.Error>{errors.frequencyCaps}</Input.Error>}
    </Stack>
  );
}

/** The unit after a figure, inside its input (hidden from screen readers: the label says it). */
function Unit({ children }: { children: string }) {
  return (
    <Text size="sm" aria-hidden pr="sm" w="100%" ta="right">
      {children}
    </Text>
  );
}
