// Stickiness insights (`StickinessQuery`): for each series, how many persons did the event in
// exactly 1, 2, ... N intervals of the range, as bars; a bar opens its persons.

import { useMemo } from 'preact/hooks';
import { formatCount } from '../format';
import { SeriesChart } from '../series-chart';
import type { EditorProps, InsightKind, ResultProps } from './kind';
import { DateRange, IntervalPicker, ResultRoot, SeriesList, SeriesTotals, answered, composing, eventNode, list, record } from './kind-parts';

function Editor({ project, query, onChange }: EditorProps) {
    return (
        <div class="kind-editor">
            <SeriesList project={project} query={query} onChange={onChange} noun="Series" />
            <div class="kind-row">
                <DateRange query={query} onChange={onChange} />
                <IntervalPicker query={query} onChange={onChange} />
            </div>
        </div>
    );
}

function Result({ project, query: given, response, onPersons, compact }: ResultProps) {
    const query = answered(given, response);
    const results = useMemo(() => list(response.results).map(record), [response]);
    const labels = useMemo(() => list(results[0]?.labels).map(String), [results]);
    const series = useMemo(
        () =>
            results.map((result) => ({
                label: [String(result.label ?? ''), result.compare_label === 'previous' ? '(previous)' : ''].filter(Boolean).join(' '),
                values: labels.map((_, index) => {
                    const value = list(result.data)[index];
                    return value === undefined || value === null ? null : Number(value);
                }),
            })),
        [results, labels],
    );
    return (
        <ResultRoot query={query} kind="stickiness" compact={compact}>
            <SeriesChart
                x={labels}
                series={series}
                kind="bar"
                timezone={project.timezone}
                height={compact ? 180 : 280}
                caption="Stickiness: persons by the number of intervals they were active in"
                {...(onPersons
                    ? {
                          onPoint: (index: number, at: number) => {
                              const result = results[index];
                              if (!result) return;
                              const day = list(result.days)[at];
                              const order = Number(record(result.action).order ?? index);
                              onPersons({
                                  title: `${series[index]?.label}: ${labels[at]}`,
                                  query: {
                                      kind: 'ActorsQuery',
                                      source: {
                                          kind: 'InsightActorsQuery',
                                          source: query,
                                          day,
                                          series: order,
                                          ...(typeof result.compare_label === 'string' ? { compare: result.compare_label } : {}),
                                      },
                                  },
                              });
                          },
                      }
                    : {})}
            />
            {!compact && <SeriesTotals heading="Series" valueHeading="Persons" rows={results.map((result, index) => ({ label: series[index]?.label, value: Number(result.count ?? 0) }))} format={formatCount} />}
        </ResultRoot>
    );
}

export const stickiness: InsightKind = {
    kind: 'StickinessQuery',
    label: 'Stickiness',
    create: () => ({ kind: 'StickinessQuery', series: [eventNode('$pageview')], interval: 'day', dateRange: { date_from: '-7d' } }),
    Editor: composing(Editor),
    Result,
};
