// Retention insights (`RetentionQuery`): persons who did a target event in a period (a cohort),
// and how many of them came back with a returning event in each period after. The result is the
// cohort grid: the cohort's start and size, then the share of it in each period, shaded; a
// cell opens the cohort's persons (the API answers persons per cohort row).

import { dayFormatter, formatCount, timeFormatter } from '../format';
import type { EditorProps, InsightKind, ResultProps } from './kind';
import { Control, EventPicker, ResultRoot, answered, composing, list, percent, record, withFilter } from './kind-parts';

const PERIODS = ['Hour', 'Day', 'Week', 'Month'];

function entityEvent(value: unknown): string | null {
    const entity = record(value);
    return typeof entity.id === 'string' ? entity.id : null;
}

function entity(event: string | null) {
    return event === null ? { id: null, name: 'All events', type: 'events' } : { id: event, name: event, type: 'events' };
}

function Editor({ project, query, onChange }: EditorProps) {
    const filter = record(query.retentionFilter);
    const period = typeof filter.period === 'string' ? filter.period : 'Day';
    const intervals = typeof filter.totalIntervals === 'number' ? filter.totalIntervals : 8;
    const type = filter.retentionType === 'retention_first_time' ? 'retention_first_time' : 'retention_recurring';
    const set = (name: string, value: unknown) => onChange(withFilter(query, 'retentionFilter', name, value));
    return (
        <div class="kind-editor">
            <div class="kind-row">
                <Control label="Did first" wide>
                    <EventPicker project={project} label="Target event" value={entityEvent(filter.targetEntity)} onChange={(event) => set('targetEntity', entity(event))} />
                </Control>
                <Control label="Came back to" wide>
                    <EventPicker
                        project={project}
                        label="Returning event"
                        value={entityEvent(filter.returningEntity)}
                        onChange={(event) => set('returningEntity', entity(event))}
                    />
                </Control>
            </div>
            <div class="kind-row">
                <Control label="Cohorts">
                    <select value={type} onChange={(event) => set('retentionType', event.currentTarget.value)}>
                        <option value="retention_recurring">Any time they did it</option>
                        <option value="retention_first_time">The first time they did it</option>
                    </select>
                </Control>
                <Control label="Period">
                    <select value={period} onChange={(event) => set('period', event.currentTarget.value)}>
                        {PERIODS.map((value) => (
                            <option key={value} value={value}>
                                {value}
                            </option>
                        ))}
                    </select>
                </Control>
                <Control label="Periods">
                    <input
                        type="number"
                        class="kind-number-input"
                        min={1}
                        value={intervals}
                        onChange={(event) => {
                            const typed = event.currentTarget.value;
                            set('totalIntervals', typed === '' ? undefined : Number(typed));
                        }}
                    />
                </Control>
            </div>
        </div>
    );
}

interface Row {
    date: string;
    label: string;
    counts: number[];
    labels: string[];
}

function Result({ project, query: given, response, onPersons, compact }: ResultProps) {
    const query = answered(given, response);
    const rows: Row[] = list(response.results).map((item) => {
        const row = record(item);
        const values = list(row.values).map(record);
        return {
            date: String(row.date ?? ''),
            label: String(row.label ?? ''),
            counts: values.map((value) => Number(value.count ?? 0)),
            labels: values.map((value) => String(value.label ?? '')),
        };
    });
    const periods = rows.reduce((most, row) => Math.max(most, row.counts.length), 0);
    const headers = rows.find((row) => row.labels.length === periods)?.labels ?? [];
    const day = dayFormatter(project.timezone);
    const time = timeFormatter(project.timezone);
    const period = String(record(query.retentionFilter).period ?? 'Day');
    const when = (row: Row) => {
        const date = new Date(row.date);
        if (Number.isNaN(date.getTime())) return row.label;
        return period === 'Hour' ? time(date) : day(date);
    };
    const persons = (index: number) => {
        const row = rows[index]!;
        onPersons?.({
            title: `Cohort of ${when(row)}`,
            query: { kind: 'ActorsQuery', source: { kind: 'InsightActorsQuery', source: query, interval: index } },
        });
    };
    if (rows.length === 0)
        return (
            <ResultRoot query={query} kind="retention" compact={compact}>
                <p class="muted">No cohorts.</p>
            </ResultRoot>
        );
    return (
        <ResultRoot query={query} kind="retention" compact={compact}>
            <div class="table-scroll">
                <table class={compact ? 'table kind-grid compact' : 'table kind-grid'}>
                    <thead>
                        <tr>
                            <th scope="col">Cohort</th>
                            <th scope="col" class="num">
                                Size
                            </th>
                            {headers.map((label, index) => (
                                <th key={index} scope="col" class="num">
                                    {label}
                                </th>
                            ))}
                        </tr>
                    </thead>
                    <tbody>
                        {rows.map((row, index) => {
                            const size = row.counts[0] ?? 0;
                            return (
                                <tr key={index} data-cohort={index}>
                                    <th scope="row">{when(row)}</th>
                                    <td class="num">
                                        <data class="kind-cohort-size" value={String(size)}>
                                            {formatCount(size)}
                                        </data>
                                    </td>
                                    {Array.from({ length: periods }, (_, at) => {
                                        const count = row.counts[at];
                                        if (count === undefined) return <td key={at} />;
                                        const share = percent(count, size);
                                        const strength = size > 0 ? count / size : 0;
                                        return (
                                            <td key={at} class="num kind-cell-wrap">
                                                <button
                                                    type="button"
                                                    class={strength > 0.5 ? 'kind-cell dark' : 'kind-cell'}
                                                    style={{ backgroundColor: `rgba(29, 74, 255, ${(0.06 + strength * 0.84).toFixed(3)})` }}
                                                    title={`${formatCount(count)} of ${formatCount(size)}`}
                                                    disabled={!onPersons}
                                                    onClick={() => persons(index)}
                                                >
                                                    <data value={String(count)} data-percent={String(share)}>
                                                        {share}%
                                                    </data>
                                                </button>
                                            </td>
                                        );
                                    })}
                                </tr>
                            );
                        })}
                    </tbody>
                </table>
            </div>
        </ResultRoot>
    );
}

export const retention: InsightKind = {
    kind: 'RetentionQuery',
    label: 'Retention',
    create: () => ({
        kind: 'RetentionQuery',
        retentionFilter: {
            targetEntity: entity('$pageview'),
            returningEntity: entity('$pageview'),
            retentionType: 'retention_recurring',
            period: 'Day',
            totalIntervals: 8,
        },
    }),
    Editor: composing(Editor),
    Result,
};
