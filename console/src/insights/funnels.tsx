// Funnel insights (`FunnelsQuery`): steps of events a person goes through in order (or strictly,
// or in any order) within a conversion window, optionally broken down by a property. The
// result: each step's count as a bar, its conversion from the first and the previous step, the
// drop-off, and the API's median and average time to convert. A bar's converted part opens the
// persons who reached the step, its dropped part those who stopped before it. Also shown as
// the conversion rate over time or the persons by time to convert (`funnelVizType`).

import { useMemo } from 'preact/hooks';
import { formatCount } from '../format';
import { SeriesChart } from '../series-chart';
import type { EditorProps, InsightKind, QueryNode, ResultProps } from './kind';
import {
    BreakdownPicker,
    Control,
    DateRange,
    ResultRoot,
    SeriesList,
    answered,
    composing,
    duration,
    eventNode,
    list,
    percent,
    record,
    withFilter,
    zonedSeconds,
} from './kind-parts';

const ORDERS: [string, string][] = [
    ['ordered', 'Sequential'],
    ['strict', 'Strict order'],
    ['unordered', 'Any order'],
];
const UNITS = ['minute', 'hour', 'day', 'week', 'month'];
const VIZ: [string, string][] = [
    ['steps', 'Steps'],
    ['trends', 'Conversion over time'],
    ['time_to_convert', 'Time to convert'],
];

function Editor({ project, query, onChange }: EditorProps) {
    const filter = record(query.funnelsFilter);
    const windowInterval = typeof filter.funnelWindowInterval === 'number' ? filter.funnelWindowInterval : 14;
    const unit = typeof filter.funnelWindowIntervalUnit === 'string' ? filter.funnelWindowIntervalUnit : 'day';
    const order = typeof filter.funnelOrderType === 'string' ? filter.funnelOrderType : 'ordered';
    const viz = typeof filter.funnelVizType === 'string' ? filter.funnelVizType : 'steps';
    return (
        <div class="kind-editor">
            <SeriesList project={project} query={query} onChange={onChange} noun="Step" min={2} max={20} />
            <div class="kind-row">
                <DateRange query={query} onChange={onChange} />
                <Control label="Conversion window">
                    <span class="kind-pair">
                        <input
                            type="number"
                            class="kind-number-input"
                            aria-label="Conversion window length"
                            min={1}
                            value={windowInterval}
                            onChange={(event) => {
                                const typed = event.currentTarget.value;
                                onChange(withFilter(query, 'funnelsFilter', 'funnelWindowInterval', typed === '' ? undefined : Number(typed)));
                            }}
                        />
                        <select
                            aria-label="Conversion window unit"
                            value={unit}
                            onChange={(event) => onChange(withFilter(query, 'funnelsFilter', 'funnelWindowIntervalUnit', event.currentTarget.value))}
                        >
                            {UNITS.map((value) => (
                                <option key={value} value={value}>
                                    {value}s
                                </option>
                            ))}
                        </select>
                    </span>
                </Control>
                <Control label="Order">
                    <select value={order} onChange={(event) => onChange(withFilter(query, 'funnelsFilter', 'funnelOrderType', event.currentTarget.value))}>
                        {ORDERS.map(([value, text]) => (
                            <option key={value} value={value}>
                                {text}
                            </option>
                        ))}
                    </select>
                </Control>
                <BreakdownPicker project={project} query={query} onChange={onChange} />
                <Control label="Show">
                    <select value={viz} onChange={(event) => onChange(withFilter(query, 'funnelsFilter', 'funnelVizType', event.currentTarget.value))}>
                        {VIZ.map(([value, text]) => (
                            <option key={value} value={value}>
                                {text}
                            </option>
                        ))}
                    </select>
                </Control>
            </div>
        </div>
    );
}

interface Step {
    name: string;
    count: number;
    median: number | null;
    average: number | null;
    breakdown: unknown;
}

/** The response's funnels: one list of steps, or one per breakdown value. */
function funnelsOf(response: Record<string, unknown>): Step[][] {
    const results = list(response.results);
    const groups = results.length > 0 && Array.isArray(results[0]) ? (results as unknown[][]) : [results];
    return groups.map((group) =>
        group.map((item) => {
            const step = record(item);
            const named = typeof step.custom_name === 'string' && step.custom_name ? step.custom_name : String(step.name ?? '');
            return {
                name: named,
                count: Number(step.count ?? 0),
                median: typeof step.median_conversion_time === 'number' ? step.median_conversion_time : null,
                average: typeof step.average_conversion_time === 'number' ? step.average_conversion_time : null,
                breakdown: step.breakdown_value ?? null,
            };
        }),
    );
}

function breakdownName(value: unknown): string {
    if (Array.isArray(value)) return value.map(String).join(', ');
    return value === null || value === undefined || value === '' ? '(none)' : String(value);
}

function Funnel({ query, steps, onPersons, compact, title }: { query: QueryNode; steps: Step[]; onPersons: ResultProps['onPersons']; compact: boolean; title: string | null }) {
    const first = steps[0]?.count ?? 0;
    const persons = (index: number, dropped: boolean) => {
        const step = steps[index]!;
        onPersons?.({
            title: `${dropped ? `Dropped off before ${step.name}` : `Reached step ${index + 1}: ${step.name}`}${title !== null ? ` (${title})` : ''}`,
            query: {
                kind: 'ActorsQuery',
                source: {
                    kind: 'InsightActorsQuery',
                    source: query,
                    funnelStep: dropped ? -(index + 1) : index + 1,
                    ...(title !== null ? { funnelStepBreakdown: step.breakdown } : {}),
                },
            },
        });
    };
    return (
        <section class="kind-funnel">
            {title !== null && <h3 class="kind-funnel-title">{title}</h3>}
            <ol class="kind-steps">
                {steps.map((step, index) => {
                    const previous = index === 0 ? step.count : steps[index - 1]!.count;
                    const fromFirst = percent(step.count, first);
                    const fromPrevious = percent(step.count, previous);
                    const dropped = previous - step.count;
                    const width = first > 0 ? (step.count / first) * 100 : 0;
                    const droppedWidth = first > 0 ? (dropped / first) * 100 : 0;
                    return (
                        <li key={index} class="kind-step" data-step={index + 1}>
                            <div class="kind-step-head">
                                <span class="kind-step-name">
                                    {index + 1}. {step.name}
                                </span>
                                <span class="kind-step-numbers">
                                    <data class="kind-step-count" value={String(step.count)}>
                                        {formatCount(step.count)}
                                    </data>
                                    {' · '}
                                    <data class="kind-step-conversion" value={String(fromFirst)}>
                                        {fromFirst}%
                                    </data>
                                </span>
                            </div>
                            <div class="kind-step-bar">
                                <button
                                    type="button"
                                    class="kind-bar-converted"
                                    style={{ width: `${width}%` }}
                                    aria-label={`Persons who reached step ${index + 1}`}
                                    disabled={!onPersons}
                                    onClick={() => persons(index, false)}
                                />
                                {index > 0 && dropped > 0 && (
                                    <button
                                        type="button"
                                        class="kind-bar-dropped"
                                        style={{ width: `${droppedWidth}%` }}
                                        aria-label={`Persons who dropped off before step ${index + 1}`}
                                        disabled={!onPersons}
                                        onClick={() => persons(index, true)}
                                    />
                                )}
                            </div>
                            {!compact && index > 0 && (
                                <p class="kind-step-detail muted">
                                    <span>
                                        <data class="kind-step-previous" value={String(fromPrevious)}>
                                            {fromPrevious}%
                                        </data>{' '}
                                        from previous
                                    </span>
                                    <span>
                                        <data class="kind-step-dropped" value={String(dropped)}>
                                            {formatCount(dropped)}
                                        </data>{' '}
                                        dropped off
                                    </span>
                                    {step.median !== null && <span>median {duration(step.median)}</span>}
                                    {step.average !== null && <span>average {duration(step.average)}</span>}
                                </p>
                            )}
                        </li>
                    );
                })}
            </ol>
        </section>
    );
}

/** `funnelVizType: trends`: the conversion rate (%) of each interval, as the API answers it. */
function ConversionTrend({ project, response, compact }: Pick<ResultProps, 'project' | 'response' | 'compact'>) {
    const result = record(list(response.results)[0]);
    const days = useMemo(() => list(result.days).map(String), [response]);
    const x = useMemo(() => days.map((day) => zonedSeconds(day, project.timezone)), [days, project.timezone]);
    const series = useMemo(
        () => [{ label: 'Conversion rate (%)', values: days.map((_, index) => (typeof list(result.data)[index] === 'number' ? (list(result.data)[index] as number) : null)) }],
        [days],
    );
    return <SeriesChart x={x} series={series} kind="line" timezone={project.timezone} height={compact ? 180 : 260} caption="Conversion rate per interval (%)" />;
}

/** `funnelVizType: time_to_convert`: persons per conversion time bin, and the average. */
function TimeToConvert({ project, response, compact }: Pick<ResultProps, 'project' | 'response' | 'compact'>) {
    const answer = record(response.results);
    const bins = useMemo(() => list(answer.bins).map((bin) => list(bin).map(Number)), [response]);
    const labels = useMemo(() => bins.map((bin) => duration(bin[0] ?? 0)), [bins]);
    const series = useMemo(() => [{ label: 'Persons', values: bins.map((bin) => bin[1] ?? null) }], [bins]);
    const average = typeof answer.average_conversion_time === 'number' ? answer.average_conversion_time : null;
    return (
        <>
            {!compact && average !== null && (
                <p class="muted">
                    Average time to convert: <data value={String(average)}>{duration(average)}</data>
                </p>
            )}
            <SeriesChart x={labels} series={series} kind="bar" timezone={project.timezone} height={compact ? 180 : 260} caption="Persons by time to convert" />
        </>
    );
}

function Result({ project, query: given, response, onPersons, compact }: ResultProps) {
    const query = answered(given, response);
    const viz = record(query.funnelsFilter).funnelVizType;
    if (viz === 'trends' || viz === 'time_to_convert')
        return (
            <ResultRoot query={query} kind="funnels" compact={compact}>
                {viz === 'trends' ? (
                    <ConversionTrend project={project} response={response} {...(compact ? { compact } : {})} />
                ) : (
                    <TimeToConvert project={project} response={response} {...(compact ? { compact } : {})} />
                )}
            </ResultRoot>
        );
    const funnels = funnelsOf(response);
    const broken = funnels.length > 1 || funnels[0]?.[0]?.breakdown !== null;
    return (
        <ResultRoot query={query} kind="funnels" compact={compact}>
            {funnels.every((steps) => steps.length === 0) && <p class="muted">No steps.</p>}
            {funnels.map((steps, index) =>
                steps.length === 0 ? null : (
                    <Funnel
                        key={index}
                        query={query}
                        steps={steps}
                        onPersons={onPersons}
                        compact={compact === true}
                        title={broken ? breakdownName(steps[0]!.breakdown) : null}
                    />
                ),
            )}
        </ResultRoot>
    );
}

export const funnels: InsightKind = {
    kind: 'FunnelsQuery',
    label: 'Funnel',
    create: () => ({
        kind: 'FunnelsQuery',
        series: [eventNode('$pageview'), eventNode('$pageview')],
        dateRange: { date_from: '-7d' },
        funnelsFilter: { funnelOrderType: 'ordered', funnelWindowInterval: 14, funnelWindowIntervalUnit: 'day' },
    }),
    Editor: composing(Editor),
    Result,
};
