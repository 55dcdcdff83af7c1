/**
 * The console's charts over time (recharts, drawn in Mantine's theme colours). Only pages that draw
 * one load this module, through `React.lazy`, so recharts stays out of every other page's code.
 *
 * Each chart is a figure named by its title, with a sentence a screen reader reads in place of the
 * drawing, and its figures as a table one click away (`<details>`); the drawing's own keyboard layer
 * (arrow keys move the tooltip) is recharts'.
 */
import { Box, Table, Text, useMantineTheme, VisuallyHidden } from '@mantine/core';
import { useId } from 'react';
import { Area, AreaChart, Bar, BarChart, CartesianGrid, Legend, ResponsiveContainer, Tooltip, XAxis, YAxis } from 'recharts';

/** One line or bar of a chart: the key it reads in each row, its name, its Mantine colour (`indigo.7`). */
export interface Series {
  key: string;
  label: string;
  color: string;
}

export type Row = Record<string, string | number>;

export interface TimeChartProps {
  title: string;
  /** What the chart shows, in words (the totals), read in place of the drawing. */
  summary: string;
  rows: Row[];
  /** The key of each row's time (the x axis), and how it is written. */
  x: string;
  formatX: (value: string) => string;
  series: Series[];
  formatY?: (value: number) => string;
  /** Whether the values have fractions (credits), for the axis's ticks. */
  decimals?: boolean;
  /** Bars stacked per row, or areas (lines filled down to the axis). */
  kind: 'areas' | 'stacked-bars';
  height?: number;
}

const plain = (n: number) => new Intl.NumberFormat(undefined).format(n);

/** A chart over time with its accessible name, summary and table. */
export default function TimeChart({ title, summary, rows, x, formatX, series, formatY = plain, decimals = false, kind, height = 260 }: TimeChartProps) {
  const theme = useMantineTheme();
  const id = useId();
  const colorOf = (name: string) => {
    const [hue, shade] = name.split('.');
    return theme.colors[hue!]?.[Number(shade ?? 6)] ?? name;
  };
  const axisText = { fill: theme.colors.gray[7], fontSize: 12 };
  const common = {
    data: rows,
    title,
    desc: summary,
    margin: { top: 8, right: 16, bottom: 0, left: 0 },
  };
  const axes = [
    <CartesianGrid key="grid" strokeDasharray="3 3" stroke={theme.colors.gray[3]} vertical={false} />,
    <XAxis key="x" dataKey={x} tickFormatter={formatX} tick={axisText} tickLine={false} axisLine={{ stroke: theme.colors.gray[5] }} minTickGap={16} />,
    <YAxis key="y" tickFormatter={formatY} tick={axisText} tickLine={false} axisLine={false} allowDecimals={decimals} width={56} />,
    // In the order the series are given, not by name.
    <Tooltip key="tooltip" labelFormatter={(v) => formatX(String(v))} formatter={(v) => formatY(Number(v))} itemSorter={(item) => series.findIndex((s) => s.key === item.dataKey)} />,
    <Legend key="legend" itemSorter={null} wrapperStyle={{ fontSize: 13, color: theme.colors.gray[8] }} />,
  ];
  return (
    <Box component="figure" m={0} aria-labelledby={`${id}-title`} aria-describedby={`${id}-summary`}>
      <Text id={`${id}-title`} component="figcaption" fw={600} mb={4}>
        {title}
      </Text>
      <VisuallyHidden id={`${id}-summary`}>{summary}</VisuallyHidden>
      <Box h={height}>
        <ResponsiveContainer width="100%" height="100%">
          {kind === 'areas' ? (
            <AreaChart {...common}>
              {axes}
              {series.map((s) => (
                <Area key={s.key} type="monotone" dataKey={s.key} name={s.label} stroke={colorOf(s.color)} fill={colorOf(s.color)} fillOpacity={0.12} strokeWidth={2} isAnimationActive={false} />
              ))}
            </AreaChart>
          ) : (
            <BarChart {...common}>
              {axes}
              {series.map((s) => (
                <Bar key={s.key} dataKey={s.key} name={s.label} stackId="one" fill={colorOf(s.color)} isAnimationActive={false} />
              ))}
            </BarChart>
          )}
        </ResponsiveContainer>
      </Box>
      <Box component="details" mt={4}>
        <Text component="summary" size="sm" style={{ cursor: 'pointer' }}>
          {title}: the figures as a table
        </Text>
        <Table striped mt="xs" fz="sm">
          <Table.Thead>
            <Table.Tr>
              <Table.Th>When</Table.Th>
              {series.map((s) => (
                <Table.Th key={s.key} ta="right">
                  {s.label}
                </Table.Th>
              ))}
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {rows.map((row) => (
              <Table.Tr key={String(row[x])}>
                <Table.Th scope="row" fw={400}>
                  {formatX(String(row[x]))}
                </Table.Th>
                {series.map((s) => (
                  <Table.Td key={s.key} ta="right">
                    {formatY(Number(row[s.key] ?? 0))}
                  </Table.Td>
                ))}
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
      </Box>
    </Box>
  );
}
