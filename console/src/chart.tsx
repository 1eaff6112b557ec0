// The daily events chart: uPlot (canvas, about 20 KB gzipped) drawing the API's daily counts as
// bars, resized with its box, with the same numbers in a table for screen readers.

import { useEffect, useMemo, useRef } from 'preact/hooks';
import uPlot from 'uplot';
import type { QueryResult } from './api';
import { asNumber, asText, dayFormatter, formatCount, shortDayFormatter } from './format';

const HEIGHT = 220;
const HALF_DAY = 12 * 60 * 60;
// Whole numbers only on the count axis.
const COUNT_STEPS = [1, 2, 5].flatMap((step) => [1, 10, 100, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8].map((scale) => step * scale));
COUNT_STEPS.sort((a, b) => a - b);

interface Props {
    /** The API's answer: a row per day, `day` (its start) and `events`. */
    result: QueryResult;
    timezone: string;
}

export function DailyChart({ result, timezone }: Props) {
    const box = useRef<HTMLDivElement>(null);
    // Each day's start in Unix seconds, and its count, as the API gave them.
    const [days, counts] = useMemo(() => {
        const day = result.columns.indexOf('day');
        const events = result.columns.indexOf('events');
        return [
            result.results.map((row) => Date.parse(asText(row[day])) / 1000),
            result.results.map((row) => asNumber(row[events])),
        ];
    }, [result]);

    useEffect(() => {
        const element = box.current;
        if (!element) return;
        const bars = uPlot.paths.bars!({ size: [0.7, 48] });
        const day = dayFormatter(timezone);
        const shortDay = shortDayFormatter(timezone);
        const options: uPlot.Options = {
            width: Math.max(element.clientWidth, 200),
            height: HEIGHT,
            tzDate: (seconds) => uPlot.tzDate(new Date(seconds * 1000), timezone),
            scales: {
                x: { time: true, range: (_plot, min, max) => [min - HALF_DAY, max + HALF_DAY] },
                y: { range: (_plot, _min, max) => [0, Math.max(max, 1) * 1.1] },
            },
            axes: [
                {
                    stroke: '#5b6270',
                    grid: { show: false },
                    ticks: { show: false },
                    values: (_plot, splits) => splits.map((start) => shortDay(new Date(start * 1000))),
                },
                { stroke: '#5b6270', grid: { stroke: '#eceef2' }, ticks: { show: false }, incrs: COUNT_STEPS, size: 56 },
            ],
            series: [
                { label: 'Day', value: (_plot, start) => (start === null ? '–' : day(new Date(start * 1000))) },
                {
                    label: 'Events',
                    stroke: '#1d4aff',
                    fill: 'rgba(29, 74, 255, 0.25)',
                    width: 1,
                    paths: bars,
                    points: { show: false },
                    value: (_plot, value) => (value === null ? '–' : formatCount(value)),
                },
            ],
            cursor: { drag: { x: false, y: false }, points: { show: false } },
            legend: { live: true },
        };
        const plot = new uPlot(options, [days, counts], element);
        const resized = new ResizeObserver(() => plot.setSize({ width: Math.max(element.clientWidth, 200), height: HEIGHT }));
        resized.observe(element);
        return () => {
            resized.disconnect();
            plot.destroy();
        };
    }, [days, counts, timezone]);

    const day = dayFormatter(timezone);
    return (
        <figure class="chart">
            <div ref={box} class="chart-canvas" aria-hidden="true" />
            <table class="visually-hidden" id="daily-table">
                <caption>Events per day</caption>
                <thead>
                    <tr>
                        <th scope="col">Day</th>
                        <th scope="col">Events</th>
                    </tr>
                </thead>
                <tbody>
                    {days.map((start, index) => (
                        <tr key={start}>
                            <th scope="row">{day(new Date(start * 1000))}</th>
                            <td>
                                <data value={String(counts[index])}>{formatCount(counts[index] ?? 0)}</data>
                            </td>
                        </tr>
                    ))}
                </tbody>
            </table>
        </figure>
    );
}
