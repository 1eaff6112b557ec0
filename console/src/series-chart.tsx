// A chart of one or more series over shared x values (days, hours, or plain categories), as a
// line or as bars, drawn by uPlot on a canvas that follows its box's width, with the same numbers
// in a table for screen readers and tests (`<data value>` per cell). Colors repeat after eight.

import { useEffect, useMemo, useRef } from 'preact/hooks';
import uPlot from 'uplot';
import { dayFormatter, formatCount, shortDayFormatter } from './format';

// Whole-number steps for the value axis when every value is a count (no 2.5 events).
const COUNT_STEPS = [1, 2, 5].flatMap((step) => [1, 10, 100, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8].map((scale) => step * scale));
COUNT_STEPS.sort((a, b) => a - b);

export const PALETTE = ['#1d4aff', '#f04f58', '#2e9e6a', '#f7a501', '#8a3ffc', '#0f9fb8', '#d44ab6', '#6b7280'];

export interface Series {
    label: string;
    values: (number | null)[];
}

export interface SeriesChartProps {
    /** The x values: Unix seconds when `time`, else category labels shown as they are. */
    x: number[] | string[];
    series: Series[];
    kind: 'line' | 'bar';
    /** The project's time zone, for days on the axis (when the x values are times). */
    timezone: string;
    height?: number;
    /** A click on a point: the series' and the x value's index (a trend's persons, say). */
    onPoint?: (series: number, index: number) => void;
    /** The table's caption (what the chart shows), for screen readers. */
    caption: string;
    /** The figure's id; its hidden table is `<id>-table`. */
    id?: string;
}

function formatNumber(value: number): string {
    return Number.isInteger(value) ? formatCount(value) : value.toLocaleString(undefined, { maximumFractionDigits: 2 });
}

export function SeriesChart({ x, series, kind, timezone, height = 260, onPoint, caption, id }: SeriesChartProps) {
    const box = useRef<HTMLDivElement>(null);
    const time = typeof x[0] === 'number' || x.length === 0;
    const positions = useMemo(() => (time ? (x as number[]) : x.map((_, index) => index)), [x, time]);
    const clicked = useRef(onPoint);
    clicked.current = onPoint;

    useEffect(() => {
        const element = box.current;
        if (!element) return;
        const day = dayFormatter(timezone);
        const shortDay = shortDayFormatter(timezone);
        const label = (value: number) => (time ? day(new Date(value * 1000)) : String((x as string[])[value] ?? ''));
        const span = positions.length > 1 ? (positions[1]! - positions[0]!) / 2 : time ? 43200 : 0.5;
        let focused = 1;
        const counts = series.every((one) => one.values.every((value) => value === null || Number.isInteger(value)));
        const bars = kind === 'bar' ? uPlot.paths.bars!({ size: [0.8 / Math.max(series.length, 1), 48] }) : undefined;
        const options: uPlot.Options = {
            width: Math.max(element.clientWidth, 200),
            height,
            ...(time ? { tzDate: (seconds: number) => uPlot.tzDate(new Date(seconds * 1000), timezone) } : {}),
            scales: {
                x: { time, range: (_plot, min, max) => [min - span, max + span] },
                y: { range: (_plot, min, max) => [Math.min(0, min), Math.max(max, 1) * 1.1] },
            },
            axes: [
                {
                    stroke: '#5b6270',
                    grid: { show: false },
                    ticks: { show: false },
                    ...(time
                        ? { values: (_plot: uPlot, splits: number[]) => splits.map((start) => shortDay(new Date(start * 1000))) }
                        : { splits: () => positions, values: (_plot: uPlot, splits: number[]) => splits.map((index) => String((x as string[])[index] ?? '')) }),
                },
                { stroke: '#5b6270', grid: { stroke: '#eceef2' }, ticks: { show: false }, size: 56, ...(counts ? { incrs: COUNT_STEPS } : {}) },
            ],
            series: [
                { label: time ? 'Day' : '', value: (_plot, value) => (value === null ? '–' : label(value)) },
                ...series.map((one, index) => {
                    const color = PALETTE[index % PALETTE.length]!;
                    return {
                        label: one.label,
                        stroke: color,
                        width: kind === 'bar' ? 1 : 2,
                        ...(bars ? { paths: bars, fill: `${color}55` } : {}),
                        points: { show: kind === 'line' && positions.length < 60, size: 5 },
                        value: (_plot: uPlot, value: number | null) => (value === null ? '–' : formatNumber(value)),
                    };
                }),
            ],
            cursor: { drag: { x: false, y: false }, focus: { prox: 24 } },
            legend: { live: true },
            hooks: {
                // The series the cursor is nearest (uPlot's focus), for the click.
                setSeries: [
                    (_plot, index, change) => {
                        if ((change as { focus?: boolean }).focus && index !== null) focused = index;
                    },
                ],
                ready: [
                    (plot) =>
                        plot.over.addEventListener('click', () => {
                            const index = plot.cursor.idx;
                            if (index === null || index === undefined || !clicked.current) return;
                            clicked.current(Math.max(focused - 1, 0), index);
                        }),
                ],
            },
        };
        const plot = new uPlot(options, [positions, ...series.map((one) => one.values)] as uPlot.AlignedData, element);
        const resized = new ResizeObserver(() => plot.setSize({ width: Math.max(element.clientWidth, 200), height }));
        resized.observe(element);
        return () => {
            resized.disconnect();
            plot.destroy();
        };
    }, [positions, series, kind, timezone, height]);

    const day = dayFormatter(timezone);
    const xLabel = (index: number) => (time ? day(new Date((x as number[])[index]! * 1000)) : String((x as string[])[index]));
    return (
        <figure class="chart" id={id}>
            <div ref={box} class={onPoint ? 'chart-canvas clickable' : 'chart-canvas'} aria-hidden="true" />
            <table class="visually-hidden chart-table" id={id ? `${id}-table` : undefined}>
                <caption>{caption}</caption>
                <thead>
                    <tr>
                        <th scope="col">{time ? 'Day' : ''}</th>
                        {series.map((one, index) => (
                            <th key={index} scope="col">
                                {one.label}
                            </th>
                        ))}
                    </tr>
                </thead>
                <tbody>
                    {positions.map((_, index) => (
                        <tr key={index}>
                            <th scope="row">{xLabel(index)}</th>
                            {series.map((one, position) => {
                                const value = one.values[index];
                                return (
                                    <td key={position}>
                                        {value === null || value === undefined ? '–' : <data value={String(value)}>{formatNumber(value)}</data>}
                                    </td>
                                );
                            })}
                        </tr>
                    ))}
                </tbody>
            </table>
        </figure>
    );
}
