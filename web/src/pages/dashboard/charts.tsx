/**
 * The console's charts over time (uPlot, drawn on a canvas in Mantine's theme colours). Only pages
 * that draw one load this module, through `React.lazy`, so uPlot stays out of every other page's
 * code; it is about 20 KB as sent, so a page with charts stays inside the console's first-load
 * budget.
 *
 * Each chart is a figure named by its title, with a sentence a screen reader reads in place of the
 * drawing, and its figures as a table one click away (`<details>`). Pointing at a day shows each
 * series' value of that day in the legend under the drawing.
 */
import { Box, Table, Text, useMantineTheme, VisuallyHidden } from '@mantine/core';
import { useEffect, useId, useRef } from 'react';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';

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

/** `#rrggbb` with an alpha, for an area's fill. */
const withAlpha = (hex: string, alpha: number) => (/^#[0-9a-f]{6}$/i.test(hex) ? `${hex}${Math.round(alpha * 255).toString(16).padStart(2, '0')}` : hex);

/** A chart over time with its accessible name, summary and table. */
export default function TimeChart({ title, summary, rows, x, formatX, series, formatY = plain, decimals = false, kind, height = 260 }: TimeChartProps) {
  const theme = useMantineTheme();
  const id = useId();
  const holder = useRef<HTMLDivElement>(null);
  const chart = useRef<uPlot | null>(null);
  // What the drawing reads when it draws: the latest rows and formatters, so that a page that
  // renders again (a live campaign, every few hundred milliseconds) does not build a new chart.
  const latest = useRef({ rows, x, formatX, formatY });
  latest.current = { rows, x, formatX, formatY };
  const seriesKey = series.map((s) => `${s.key}/${s.label}/${s.color}`).join('|');
  const dataKey = JSON.stringify(rows);

  // Stacked bars, the first series at the bottom, are drawn tallest first: each bar is its series'
  // value plus every series under it, so the ones drawn over it leave its own part showing. The
  // legend, top of the stack first, reads each series' own value.
  const drawn = kind === 'stacked-bars' ? [...series].reverse() : series;
  const value = (row: Row, key: string) => Number(row[key] ?? 0);
  const dataOf = (of: Row[]): uPlot.AlignedData => [
    of.map((_, i) => i),
    ...drawn.map((s) => {
      const below = kind === 'stacked-bars' ? series.slice(0, series.indexOf(s) + 1) : [s];
      return of.map((row) => below.reduce((sum, b) => sum + value(row, b.key), 0));
    }),
  ];

  useEffect(() => {
    const el = holder.current;
    if (!el) return;
    const colorOf = (name: string) => {
      const [hue, shade] = name.split('.');
      return theme.colors[hue!]?.[Number(shade ?? 6)] ?? name;
    };
    const row = (i: number | null) => (i == null ? undefined : latest.current.rows[i]);
    const label = (i: number) => {
      const r = row(i);
      return r ? latest.current.formatX(String(r[latest.current.x])) : '';
    };
    const axis = { stroke: theme.colors.gray[7], font: '12px system-ui, sans-serif', grid: { stroke: theme.colors.gray[3], width: 1, dash: [3, 3] }, ticks: { show: false } };
    const bars = uPlot.paths.bars!({ size: [0.7, 48] });
    const made = new uPlot(
      {
        width: Math.max(200, el.clientWidth),
        height,
        scales: { x: { time: false, range: () => [-0.5, latest.current.rows.length - 0.5] }, y: { range: (_, _min, max) => [0, max > 0 ? max * 1.1 : 1] } },
        axes: [
          { ...axis, grid: { show: false }, space: 48, incrs: [1, 2, 3, 5, 7, 10, 14, 15, 30, 60], values: (_, ticks) => ticks.map((t) => (Number.isInteger(t) ? label(t) : '')) },
          { ...axis, size: 56, values: (_, ticks) => ticks.map((t) => latest.current.formatY(t)), incrs: decimals ? undefined : [1, 2, 5, 10, 20, 50, 100, 200, 500, 1_000, 2_000, 5_000, 10_000, 20_000, 50_000, 100_000, 1e6, 1e7] },
        ],
        series: [
          { label: 'When', value: (_, __, ___, i) => (i == null ? '' : label(i)) },
          ...drawn.map((s) => ({
            label: s.label,
            stroke: colorOf(s.color),
            width: kind === 'areas' ? 2 : 0,
            fill: kind === 'areas' ? withAlpha(colorOf(s.color), 0.12) : colorOf(s.color),
            points: { show: false },
            ...(kind === 'stacked-bars' && { paths: bars }),
            value: (_: uPlot, __: number | null, ___: number, i: number | null) => {
              const r = row(i);
              return r ? latest.current.formatY(value(r, s.key)) : '';
            },
          })),
        ],
        legend: { live: true },
        cursor: { drag: { x: false, y: false } },
      },
      dataOf(latest.current.rows),
      el,
    );
    chart.current = made;
    const resize = new ResizeObserver(() => made.setSize({ width: Math.max(200, el.clientWidth), height }));
    resize.observe(el);
    return () => {
      resize.disconnect();
      made.destroy();
      chart.current = null;
    };
    // The chart is built again only when what it draws changes shape; new rows are set into it below.
  }, [seriesKey, kind, height, decimals, theme]);

  useEffect(() => {
    chart.current?.setData(dataOf(latest.current.rows));
  }, [dataKey]);

  return (
    <Box component="figure" m={0} aria-labelledby={`${id}-title`} aria-describedby={`${id}-summary`}>
      <Text id={`${id}-title`} component="figcaption" fw={600} mb={4}>
        {title}
      </Text>
      <VisuallyHidden id={`${id}-summary`}>{summary}</VisuallyHidden>
      <Box ref={holder} aria-hidden data-chart={kind} />
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
