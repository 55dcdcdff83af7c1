/**
 * A group's `color` is a Tailwind CSS class string (the interface's choice), such as `bg-red-500`.
 * The console offers the common ones and draws each with the nearest Mantine color.
 */
const TAILWIND_TO_MANTINE: Record<string, string> = {
  red: 'red',
  orange: 'orange',
  amber: 'yellow',
  yellow: 'yellow',
  lime: 'lime',
  green: 'green',
  emerald: 'teal',
  teal: 'teal',
  cyan: 'cyan',
  sky: 'blue',
  blue: 'blue',
  indigo: 'indigo',
  violet: 'violet',
  purple: 'grape',
  fuchsia: 'grape',
  pink: 'pink',
  rose: 'pink',
  gray: 'gray',
  slate: 'gray',
};

export const GROUP_COLORS = ['bg-red-500', 'bg-orange-500', 'bg-yellow-500', 'bg-green-500', 'bg-teal-500', 'bg-blue-500', 'bg-indigo-500', 'bg-purple-500', 'bg-pink-500', 'bg-gray-500'];

/** The CSS color to draw a Tailwind class with (gray for anything unrecognised). */
export function swatchOf(tailwindClass: string): string {
  const name = /(?:^|\s)bg-([a-z]+)-\d{2,3}(?:\s|$)/.exec(tailwindClass)?.[1] ?? 'gray';
  return `var(--mantine-color-${TAILWIND_TO_MANTINE[name] ?? 'gray'}-6)`;
}
