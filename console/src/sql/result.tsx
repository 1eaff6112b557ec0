// A SQL answer shown four ways: a table (the API's `columns` and `types`, paged here), a line or
// bar chart (the first column as x, every numeric column a series) and a big number (the first
// cell). The values are the API's, written as they came.

import { useEffect, useMemo, useState } from 'preact/hooks';
import { formatCount } from '../format';
import { SeriesChart, type Series } from '../series-chart';
import { Pager } from '../ui';
import { ScrollTable } from '../ui-list';

export type View = 'table' | 'line' | 'bar' | 'number';

export const VIEWS: { view: View; label: string; display: string }[] = [
    { view: 'table', label: 'Table', display: 'ActionsTable' },
    { view: 'line', label: 'Line', display: 'ActionsLineGraph' },
    { view: 'bar', label: 'Bar', display: 'ActionsBar' },
    { view: 'number', label: 'Number', display: 'BoldNumber' },
];

/** The view of PostHog's `display` (ChartDisplayType) of a DataVisualizationNode. */
export function viewOfDisplay(display: unknown): View {
    return VIEWS.find((one) => one.display === display)?.view ?? 'table';
}

export function displayOfView(view: View): string {
    return VIEWS.find((one) => one.view === view)!.display;
}

export function isView(value: string | null): value is View {
    return VIEWS.some((one) => one.view === value);
}

/** The parts of a query's answer shown here (`result` is the insight's name for `results`). */
export interface SqlAnswer {
    columns?: string[] | null;
    types?: ([string, string] | string)[] | null;
    results?: unknown[][] | null;
    result?: unknown[][] | null;
    hasMore?: boolean | null;
    limit?: number | null;
}

export function rowsOf(answer: SqlAnswer): unknown[][] {
    return (Array.isArray(answer.results) ? answer.results : Array.isArray(answer.result) ? answer.result : []) as unknown[][];
}

function typeOf(answer: SqlAnswer, index: number): string {
    const type = answer.types?.[index];
    return Array.isArray(type) ? String(type[1] ?? '') : String(type ?? '');
}

/** A ClickHouse type's core (`Nullable(LowCardinality(String))` → `String`). */
function bare(type: string): string {
    let inner = type;
    for (;;) {
        const wrapped = /^(?:Nullable|LowCardinality)\((.*)\)$/.exec(inner);
        if (!wrapped) return inner;
        inner = wrapped[1]!;
    }
}

export function isNumericType(type: string): boolean {
    return /^(U?Int\d+|Float\d+|Decimal)/.test(bare(type));
}

function isTimeType(type: string): boolean {
    return /^(Date|DateTime)/.test(bare(type));
}

function cellText(value: unknown): string {
    if (value === null || value === undefined) return 'null';
    if (typeof value === 'object') return JSON.stringify(value);
    return String(value);
}

export function ViewPicker({ view, onView }: { view: View; onView: (view: View) => void }) {
    return (
        <div class="sql-views" role="group" aria-label="Show as">
            {VIEWS.map((one) => (
                <button key={one.view} type="button" class={one.view === view ? 'secondary active' : 'secondary'} aria-pressed={one.view === view ? 'true' : 'false'} onClick={() => onView(one.view)}>
                    {one.label}
                </button>
            ))}
        </div>
    );
}

const PAGE = 50;

function ResultTable({ answer, compact }: { answer: SqlAnswer; compact?: boolean | undefined }) {
    const rows = rowsOf(answer);
    const columns = answer.columns ?? [];
    const [offset, setOffset] = useState(0);
    useEffect(() => setOffset(0), [answer]);
    const limit = compact ? 10 : PAGE;
    const shown = rows.slice(offset, offset + limit);
    return (
        <>
            <ScrollTable
                class="sql-table"
                head={
                    <>
                        {columns.map((column, index) => (
                            <th key={index} scope="col" class={isNumericType(typeOf(answer, index)) ? 'num' : undefined} title={typeOf(answer, index)}>
                                {column}
                            </th>
                        ))}
                    </>
                }
            >
                {shown.map((row, rowIndex) => (
                    <tr key={offset + rowIndex}>
                        {columns.map((_, index) => {
                            const value = row[index];
                            const numeric = isNumericType(typeOf(answer, index));
                            const text = cellText(value);
                            return (
                                <td key={index} class={[numeric ? 'num' : '', value === null || value === undefined ? 'muted' : ''].filter(Boolean).join(' ') || undefined}>
                                    {text.length > 200 ? <span title={text}>{`${text.slice(0, 200)}…`}</span> : text}
                                </td>
                            );
                        })}
                    </tr>
                ))}
            </ScrollTable>
            {rows.length === 0 && <p class="muted">No rows.</p>}
            <Pager offset={offset} limit={limit} shown={shown.length} hasMore={offset + limit < rows.length} onOffset={setOffset} />
        </>
    );
}

function ResultChart({ answer, kind, timezone, compact, chartId }: { answer: SqlAnswer; kind: 'line' | 'bar'; timezone: string; compact?: boolean | undefined; chartId?: string | undefined }) {
    const chart = useMemo(() => {
        const rows = rowsOf(answer);
        const columns = answer.columns ?? [];
        if (columns.length < 2) return null;
        const numeric = columns.map((_, index) => index).filter((index) => index > 0 && isNumericType(typeOf(answer, index)));
        if (!numeric.length) return null;
        // Times on a time axis (the project's days); anything else as categories.
        const times = isTimeType(typeOf(answer, 0)) && rows.length > 1 ? rows.map((row) => Date.parse(String(row[0])) / 1000) : null;
        const x = times && times.every((value) => Number.isFinite(value)) ? times : rows.map((row) => cellText(row[0]));
        const series: Series[] = numeric.map((index) => ({
            label: columns[index]!,
            values: rows.map((row) => {
                const value = row[index];
                if (value === null || value === undefined) return null;
                const number = typeof value === 'number' ? value : Number(value);
                return Number.isFinite(number) ? number : null;
            }),
        }));
        return { x, series };
    }, [answer]);
    if (!chart) return <p class="muted">A chart needs the x values in the first column and at least one numeric column after it.</p>;
    return (
        <SeriesChart
            x={chart.x}
            series={chart.series}
            kind={kind}
            timezone={timezone}
            height={compact ? 180 : 300}
            caption={`${chart.series.map((one) => one.label).join(', ')} by ${(answer.columns ?? [])[0] ?? ''}`}
            {...(chartId ? { id: chartId } : {})}
        />
    );
}

function BigNumber({ answer }: { answer: SqlAnswer }) {
    const rows = rowsOf(answer);
    if (!rows.length || !(answer.columns ?? []).length) return <p class="muted">No rows.</p>;
    const value = rows[0]![0];
    const text = typeof value === 'number' && Number.isInteger(value) ? formatCount(value) : cellText(value);
    return (
        <figure class="sql-big-number">
            <data value={cellText(value)}>{text}</data>
            <figcaption class="muted">{answer.columns![0]}</figcaption>
        </figure>
    );
}

export function ResultView({ answer, view, timezone, compact, chartId }: { answer: SqlAnswer; view: View; timezone: string; compact?: boolean | undefined; chartId?: string }) {
    if (view === 'number') return <BigNumber answer={answer} />;
    if (view === 'line' || view === 'bar') return <ResultChart answer={answer} kind={view} timezone={timezone} compact={compact} chartId={chartId} />;
    return <ResultTable answer={answer} compact={compact} />;
}

/** "12 rows", and whether the API held some back (no LIMIT means its first 100). */
export function RowCount({ answer }: { answer: SqlAnswer }) {
    const count = rowsOf(answer).length;
    return (
        <span class="muted sql-count">
            {`${formatCount(count)} ${count === 1 ? 'row' : 'rows'}`}
            {answer.hasMore ? ' (more rows exist: add a LIMIT, up to 50,000)' : ''}
        </span>
    );
}
