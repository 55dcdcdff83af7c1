import { CheckIcon, ColorSwatch, Group, Input, Text } from '@mantine/core';
import { useId, useRef, type KeyboardEvent } from 'react';
import { GROUP_COLORS, swatchOf } from '../../lib/colors';

/** A stored colour as a person says it: `bg-blue-500` is "Blue"; one the console does not offer keeps its class. */
export function colorName(value: string): string {
  if (!GROUP_COLORS.includes(value)) return `Current (${value})`;
  const name = /bg-([a-z]+)-/.exec(value)?.[1] ?? value;
  return name[0]!.toUpperCase() + name.slice(1);
}

const STEPS: Record<string, number> = { ArrowRight: 1, ArrowDown: 1, ArrowLeft: -1, ArrowUp: -1 };

interface Props {
  /** The stored value: a Tailwind class such as `bg-blue-500`, as the API takes it. */
  value: string;
  onChange: (value: string) => void;
  error?: string;
}

/**
 * A group's colour as swatches, one radio group: Tab reaches the chosen swatch, the arrow keys (and
 * Home, End) choose another, as with any set of radio buttons. A colour set through the API that
 * the console does not offer stays offered, so that saving the form keeps it.
 */
export function ColorField({ value, onChange, error }: Props) {
  const id = useId();
  const options = GROUP_COLORS.includes(value) ? GROUP_COLORS : [...GROUP_COLORS, value];
  const buttons = useRef<(HTMLButtonElement | null)[]>([]);

  const choose = (index: number) => {
    onChange(options[index]!);
    buttons.current[index]?.focus();
  };
  const onKeyDown = (e: KeyboardEvent, index: number) => {
    const next = e.key === 'Home' ? 0 : e.key === 'End' ? options.length - 1 : STEPS[e.key] === undefined ? null : (index + STEPS[e.key]! + options.length) % options.length;
    if (next === null) return;
    e.preventDefault();
    choose(next);
  };

  return (
    <Input.Wrapper id={id} label="Color" labelElement="div" error={error}>
      <Group gap="xs" mt={4} align="center">
        <Group gap={6} role="radiogroup" aria-labelledby={`${id}-label`} aria-describedby={error ? `${id}-error` : undefined} aria-invalid={error ? true : undefined}>
          {options.map((option, index) => {
            const checked = option === value;
            return (
              <ColorSwatch
                key={option}
                component="button"
                type="button"
                role="radio"
                aria-checked={checked}
                aria-label={colorName(option)}
                title={colorName(option)}
                tabIndex={checked ? 0 : -1}
                ref={(el: HTMLButtonElement | null) => {
                  buttons.current[index] = el;
                }}
                color={swatchOf(option)}
                size={28}
                className="mantine-focus-auto"
                style={{ cursor: 'pointer', color: 'white' }}
                onClick={() => choose(index)}
                onKeyDown={(e: KeyboardEvent) => onKeyDown(e, index)}
              >
                {checked && <CheckIcon size={12} aria-hidden />}
              </ColorSwatch>
            );
          })}
        </Group>
        <Text size="sm" aria-hidden>
          {colorName(value)}
        </Text>
      </Group>
    </Input.Wrapper>
  );
}
