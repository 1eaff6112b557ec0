// Lifecycle insights (`LifecycleQuery`): per interval, the persons doing one event who were
// new, returning, resurrecting, or went dormant (negative), as bars; a bar opens its persons.

import { useMemo } from 'preact/hooks';
import { formatCount } from '../format';
import { SeriesChart } from '../series-chart';
import type { EditorProps, InsightKind, QueryNode, ResultProps } from './kind';
import {
    Control,
    DateRange,
    EventPicker,
    IntervalPicker,
    ResultRoot,
    answered,
    composing,
    eventNode,
    list,
    record,
    seriesOf,
    withField,
    withFilter,
    zonedSeconds,
    SeriesTotals,
} from './kind-parts';

const STATUSES = ['new', 'returning', 'resurrecting', 'dormant'];

/** The statuses to show (`lifecycleFilter.toggledLifecycles`; all four without it). */
function toggled(query: QueryNode): string[] {
    const chosen = record(query.lifecycleFilter).toggledLifecycles;
    return Array.isArray(chosen) ? STATUSES.filter((status) => chosen.includes(status)) : STATUSES;
}

function Editor({ project, query, onChange }: EditorProps) {
    const first = seriesOf(query)[0];
    const shown = toggled(query);
    return (
        <div class="kind-editor">
            <div class="kind-row">
                <Control label="Event" wide>
                    <EventPicker
                        project={project}
                        label="Lifecycle event"
                        value={typeof first?.event === 'string' ? first.event : null}
                        onChange={(event) => onChange(withField(query, 'series', [eventNode(event)]))}
                    />
                </Control>
                <DateRange query={query} onChange={onChange} />
                <IntervalPicker query={query} onChange={onChange} />
            </div>
            <fieldset class="kind-row kind-fieldset">
                <legend class="kind-label">Show</legend>
                {STATUSES.map((status) => (
                    <label key={status} class="kind-check">
                        <input
                            type="checkbox"
                            checked={shown.includes(status)}
                            onChange={(event) => {
                                const next = event.currentTarget.checked ? STATUSES.filter((one) => one === status || shown.includes(one)) : shown.filter((one) => one !== status);
                                onChange(withFilter(query, 'lifecycleFilter', 'toggledLifecycles', next.length === STATUSES.length ? undefined : next));
                            }}
                        />
                        {status}
                    </label>
                ))}
            </fieldset>
        </div>
    );
}

function Result({ project, query: given, response, onPersons, compact }: ResultProps) {
    const query = answered(given, response);
    const statuses = toggled(query);
    const results = useMemo(
        () => list(response.results).map(record).filter((result) => typeof result.status !== 'string' || statuses.includes(result.status)),
        [response, statuses.join()],
    );
    const days = useMemo(() => list(results[0]?.days).map(String), [results]);
    const x = useMemo(() => days.map((day) => zonedSeconds(day, project.timezone)), [days, project.timezone]);
    const series = useMemo(
        () =>
            results.map((result) => ({
                label: String(result.status ?? result.label ?? ''),
                values: days.map((_, index) => {
                    const value = list(result.data)[index];
                    return value === undefined || value === null ? null : Number(value);
                }),
            })),
        [results, days],
    );
    return (
        <ResultRoot query={query} kind="lifecycle" compact={compact}>
            <SeriesChart
                x={x}
                series={series}
                kind="bar"
                timezone={project.timezone}
                height={compact ? 180 : 280}
                caption="Lifecycle: persons by status per interval"
                {...(onPersons
                    ? {
                          onPoint: (index: number, at: number) => {
                              const result = results[index];
                              const day = days[at];
                              if (!result || !day) return;
                              onPersons({
                                  title: `${String(result.status ?? '')} on ${day}`,
                                  query: {
                                      kind: 'ActorsQuery',
                                      source: { kind: 'InsightActorsQuery', source: query, day, status: result.status },
                                  },
                              });
                          },
                      }
                    : {})}
            />
            {!compact && <SeriesTotals heading="Status" valueHeading="Total" rows={results.map((result, index) => ({ label: series[index]?.label, value: Number(result.count ?? 0) }))} format={formatCount} />}
        </ResultRoot>
    );
}

export const lifecycle: InsightKind = {
    kind: 'LifecycleQuery',
    label: 'Lifecycle',
    create: () => ({ kind: 'LifecycleQuery', series: [eventNode('$pageview')], interval: 'day', dateRange: { date_from: '-7d' } }),
    Editor: composing(Editor),
    Result,
};
