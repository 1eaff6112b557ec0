// Trends insights (`TrendsQuery`): series of events counted per interval (total, active users,
// a property's sum or average, ...), broken down by a property, compared with the period
// before, as a line, bars or one number per series. A point opens its persons.

import { useMemo } from 'preact/hooks';
import { SeriesChart } from '../series-chart';
import type { EditorProps, InsightKind, ResultProps } from './kind';
import {
    BreakdownPicker,
    Control,
    DateRange,
    IntervalPicker,
    PropertyPicker,
    ResultRoot,
    type SeriesItem,
    SeriesList,
    answered,
    composing,
    eventNode,
    formatValue,
    list,
    record,
    withField,
    withFilter,
    zonedSeconds,
    SeriesTotals,
} from './kind-parts';

const MATHS: [string, string][] = [
    ['total', 'Total count'],
    ['dau', 'Unique users'],
    ['weekly_active', 'Weekly active'],
    ['monthly_active', 'Monthly active'],
    ['sum', 'Sum of property'],
    ['avg', 'Average of property'],
    ['min', 'Minimum of property'],
    ['max', 'Maximum of property'],
    ['median', 'Median of property'],
];
const PROPERTY_MATHS = new Set(['sum', 'avg', 'min', 'max', 'median']);

const DISPLAYS: [string, string][] = [
    ['ActionsLineGraph', 'Line'],
    ['ActionsBar', 'Bars'],
    ['BoldNumber', 'Number'],
];

function Editor({ project, query, onChange }: EditorProps) {
    const display = typeof record(query.trendsFilter).display === 'string' ? (record(query.trendsFilter).display as string) : 'ActionsLineGraph';
    const compare = record(query.compareFilter).compare === true;
    return (
        <div class="kind-editor">
            <SeriesList
                project={project}
                query={query}
                onChange={onChange}
                noun="Series"
                extra={(item, set) => {
                    const math = typeof item.math === 'string' ? item.math : 'total';
                    return (
                        <>
                            <select
                                class="kind-math"
                                aria-label="Counted as"
                                value={math}
                                onChange={(event) => {
                                    const chosen = event.currentTarget.value;
                                    const next: SeriesItem = { ...item, math: chosen };
                                    if (!PROPERTY_MATHS.has(chosen)) delete next.math_property;
                                    set(next);
                                }}
                            >
                                {MATHS.map(([value, text]) => (
                                    <option key={value} value={value}>
                                        {text}
                                    </option>
                                ))}
                            </select>
                            {PROPERTY_MATHS.has(math) && (
                                <PropertyPicker
                                    project={project}
                                    type="event"
                                    label="Property counted"
                                    value={typeof item.math_property === 'string' ? item.math_property : ''}
                                    onChange={(name) => set({ ...item, math_property: name })}
                                />
                            )}
                        </>
                    );
                }}
            />
            <div class="kind-row">
                <DateRange query={query} onChange={onChange} />
                <IntervalPicker query={query} onChange={onChange} />
                <BreakdownPicker project={project} query={query} onChange={onChange} />
                <Control label="Display">
                    <select value={display} onChange={(event) => onChange(withFilter(query, 'trendsFilter', 'display', event.currentTarget.value))}>
                        {DISPLAYS.map(([value, text]) => (
                            <option key={value} value={value}>
                                {text}
                            </option>
                        ))}
                    </select>
                </Control>
                <label class="kind-check">
                    <input
                        type="checkbox"
                        checked={compare}
                        onChange={(event) => onChange(withField(query, 'compareFilter', event.currentTarget.checked ? { compare: true } : undefined))}
                    />
                    Compare to previous period
                </label>
            </div>
        </div>
    );
}

/** One series of the response, as the chart and the legend read it. */
interface Line {
    label: string;
    data: number[];
    days: string[];
    /** The bucket starts with their offsets (`action.days`), when the API gives them. */
    times: string[];
    count: number;
    aggregated: number | null;
    order: number;
    breakdown: unknown;
    compare: string | null;
}

function lines(response: Record<string, unknown>): Line[] {
    return list(response.results).map((item) => {
        const result = record(item);
        const action = record(result.action);
        const compare = typeof result.compare_label === 'string' ? result.compare_label : null;
        const breakdown = result.breakdown_value;
        const base = typeof result.label === 'string' ? result.label : String(action.name ?? '');
        const label = [base, compare === 'previous' ? '(previous)' : ''].filter(Boolean).join(' ');
        return {
            label,
            data: list(result.data).map(Number),
            days: list(result.days).map(String),
            times: list(action.days).map(String),
            count: Number(result.count ?? 0),
            aggregated: typeof result.aggregated_value === 'number' ? result.aggregated_value : null,
            order: typeof action.order === 'number' ? action.order : 0,
            breakdown: breakdown === undefined ? null : breakdown,
            compare,
        };
    });
}

function Result({ project, query: given, response, onPersons, compact }: ResultProps) {
    const query = answered(given, response);
    const shown = useMemo(() => lines(response), [response]);
    const display = record(query.trendsFilter).display;
    const first = shown.find((line) => line.compare !== 'previous') ?? shown[0];
    const x = useMemo(
        () => (first ? (first.times.length === first.days.length ? first.times : first.days).map((day) => zonedSeconds(day, project.timezone)) : []),
        [first, project.timezone],
    );
    const series = useMemo(() => shown.map((line) => ({ label: line.label, values: x.map((_, index) => line.data[index] ?? null) })), [shown, x]);
    const persons = (line: Line, day: string | null) =>
        onPersons?.({
            title: day ? `${line.label} on ${day}` : line.label,
            query: {
                kind: 'ActorsQuery',
                source: {
                    kind: 'InsightActorsQuery',
                    source: query,
                    ...(day ? { day } : {}),
                    series: line.order,
                    ...(line.breakdown !== null ? { breakdown: line.breakdown } : {}),
                    ...(line.compare ? { compare: line.compare } : {}),
                },
            },
        });

    if (shown.length === 0)
        return (
            <ResultRoot query={query} kind="trends" compact={compact}>
                <p class="muted">No series.</p>
            </ResultRoot>
        );

    if (display === 'BoldNumber' || shown.every((line) => line.aggregated !== null && line.data.length === 0)) {
        return (
            <ResultRoot query={query} kind="trends" compact={compact}>
                <ul class={compact ? 'kind-numbers compact' : 'kind-numbers'}>
                    {shown.map((line, index) => (
                        <li key={index}>
                            <button type="button" class="link kind-number" disabled={!onPersons} onClick={() => persons(line, null)}>
                                <data value={String(line.aggregated ?? line.count)}>{formatValue(line.aggregated ?? line.count)}</data>
                            </button>
                            <span class="muted">{line.label}</span>
                        </li>
                    ))}
                </ul>
            </ResultRoot>
        );
    }

    return (
        <ResultRoot query={query} kind="trends" compact={compact}>
            <SeriesChart
                x={x}
                series={series}
                kind={display === 'ActionsBar' ? 'bar' : 'line'}
                timezone={project.timezone}
                height={compact ? 180 : 280}
                caption="Trends"
                {...(onPersons
                    ? {
                          onPoint: (index: number, at: number) => {
                              const line = shown[index];
                              const day = line?.days[at];
                              if (line && day) persons(line, day);
                          },
                      }
                    : {})}
            />
            {!compact && <SeriesTotals heading="Series" valueHeading="Total" rows={shown.map((line) => ({ label: line.label, value: line.count }))} />}
        </ResultRoot>
    );
}

export const trends: InsightKind = {
    kind: 'TrendsQuery',
    label: 'Trends',
    create: () => ({
        kind: 'TrendsQuery',
        series: [eventNode('$pageview', { math: 'total' })],
        interval: 'day',
        dateRange: { date_from: '-7d' },
        trendsFilter: { display: 'ActionsLineGraph' },
    }),
    Editor: composing(Editor),
    Result,
};
