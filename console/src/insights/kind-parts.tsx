// The pieces the insight kinds' editors and results share: pickers of events and properties
// (the project's definitions, searched as one types), the date range and interval, a breakdown,
// the result's root element (`#insight-result` with the node it shows in `data-query`), and the
// project's days as chart times. Nothing here validates what the API validates.

import type { ComponentChildren, ComponentType } from 'preact';
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { type Paged, type Project, http, projectPath, withParams } from '../api';
import { formatCount } from '../format';
import type { EditorProps, QueryNode } from './kind';

export type Json = Record<string, unknown>;

/** `value` as an object (an empty one for anything else). */
export function record(value: unknown): Json {
    return value && typeof value === 'object' && !Array.isArray(value) ? (value as Json) : {};
}

export function list(value: unknown): unknown[] {
    return Array.isArray(value) ? value : [];
}

/** The node with `name` replaced (removed when `value` is undefined). */
export function withField(query: QueryNode, name: string, value: unknown): QueryNode {
    const next: QueryNode = { ...query };
    if (value === undefined) delete next[name];
    else next[name] = value;
    return next;
}

/** The node with `filter.name` replaced inside one of its filter objects (`trendsFilter`, ...). */
export function withFilter(query: QueryNode, filter: string, name: string, value: unknown): QueryNode {
    const inner: Json = { ...record(query[filter]) };
    if (value === undefined) delete inner[name];
    else inner[name] = value;
    return withField(query, filter, inner);
}

let nextId = 0;
/** An id for a `<datalist>` or a label, stable for the component's life. */
export function useId(prefix: string): string {
    return useMemo(() => `${prefix}-${(nextId += 1)}`, []);
}

interface Definition {
    name: string;
}

/** The project's event or property definitions whose names contain `search` (first 20). */
function useDefinitions(project: Project, route: string, search: string, type?: string): string[] {
    const [names, setNames] = useState<string[]>([]);
    useEffect(() => {
        let current = true;
        const timer = setTimeout(() => {
            http.get<Paged<Definition>>(projectPath(project.id, withParams(route, { search, type, limit: 20 })))
                .then((page) => current && setNames(page.results.map((one) => one.name)))
                .catch(() => current && setNames([]));
        }, 150);
        return () => {
            current = false;
            clearTimeout(timer);
        };
    }, [project.id, route, search, type]);
    return names;
}

/** A text box suggesting the project's names as one types (the browser's `<datalist>`). */
function Suggesting({ value, onChange, names, label, placeholder, onSearch }: {
    value: string;
    onChange: (value: string) => void;
    names: string[];
    label: string;
    placeholder: string;
    onSearch: (text: string) => void;
}) {
    const id = useId('kind-list');
    // What the person has typed since the node last had `base` here. It is derived while rendering,
    // not copied in an effect: an effect runs after paint, and would wipe text typed (or a name
    // picked) between the box appearing and that paint, leaving the node with the old value.
    const [edit, setEdit] = useState<{ text: string; base: string } | null>(null);
    const text = edit && edit.base === value ? edit.text : value;
    const commit = (typed: string) => {
        setEdit(null);
        onChange(typed);
    };
    return (
        <>
            <input
                class="kind-input"
                aria-label={label}
                list={id}
                value={text}
                placeholder={placeholder}
                autoComplete="off"
                onInput={(event) => {
                    const typed = event.currentTarget.value;
                    setEdit({ text: typed, base: value });
                    onSearch(typed);
                    // A name picked from the list is taken at once; typed text on change (blur, Enter).
                    if (names.includes(typed)) commit(typed);
                }}
                onChange={(event) => commit(event.currentTarget.value.trim())}
                onKeyDown={(event) => {
                    // Enter takes the typed text even while the browser's suggestions are open.
                    if (event.key === 'Enter') commit(event.currentTarget.value.trim());
                }}
            />
            <datalist id={id}>
                {names.map((name) => (
                    <option key={name} value={name} />
                ))}
            </datalist>
        </>
    );
}

/** An event name from the project's event definitions; empty means all events. */
export function EventPicker({ project, value, onChange, label, allowAll = true }: {
    project: Project;
    value: string | null;
    onChange: (event: string | null) => void;
    label: string;
    allowAll?: boolean;
}) {
    const [search, setSearch] = useState('');
    const names = useDefinitions(project, 'event_definitions/', search);
    return (
        <Suggesting
            value={value ?? ''}
            onChange={(typed) => onChange(typed === '' && allowAll ? null : typed)}
            names={names}
            label={label}
            placeholder={allowAll ? 'All events' : 'Event name'}
            onSearch={setSearch}
        />
    );
}

/** A property name of events or persons, from the project's property definitions. */
export function PropertyPicker({ project, type, value, onChange, label }: {
    project: Project;
    type: 'event' | 'person';
    value: string;
    onChange: (name: string) => void;
    label: string;
}) {
    const [search, setSearch] = useState('');
    const names = useDefinitions(project, 'property_definitions/', search, type);
    return <Suggesting value={value} onChange={onChange} names={names} label={label} placeholder="Property" onSearch={setSearch} />;
}

/** One labelled control of an editor's row. */
export function Control({ label, children, wide }: { label: string; children: ComponentChildren; wide?: boolean }) {
    return (
        <label class={wide ? 'kind-control wide' : 'kind-control'}>
            <span class="kind-label">{label}</span>
            {children}
        </label>
    );
}

const RANGES: [string, string][] = [
    ['-24h', 'Last 24 hours'],
    ['-7d', 'Last 7 days'],
    ['-14d', 'Last 14 days'],
    ['-30d', 'Last 30 days'],
    ['-90d', 'Last 90 days'],
    ['-180d', 'Last 180 days'],
    ['mStart', 'This month'],
    ['yStart', 'Year to date'],
    ['all', 'All time'],
];

/** `dateRange`: a relative range, or from and to dates (the project's days). */
export function DateRange({ query, onChange, fallback = '-7d' }: { query: QueryNode; onChange: (query: QueryNode) => void; fallback?: string }) {
    const range = record(query.dateRange);
    const from = typeof range.date_from === 'string' ? range.date_from : fallback;
    const to = typeof range.date_to === 'string' ? range.date_to : '';
    const fixed = /^\d{4}-\d{2}-\d{2}/.test(from);
    const set = (date_from: string, date_to: string) =>
        onChange(withField(query, 'dateRange', date_to ? { date_from, date_to } : { date_from }));
    const known = RANGES.some(([value]) => value === from);
    return (
        <>
            <Control label="Dates">
                <select
                    value={fixed ? 'custom' : from}
                    onChange={(event) => {
                        const chosen = event.currentTarget.value;
                        if (chosen === 'custom') {
                            const today = new Date().toISOString().slice(0, 10);
                            const weekAgo = new Date(Date.now() - 7 * 86400000).toISOString().slice(0, 10);
                            set(weekAgo, today);
                        } else set(chosen, '');
                    }}
                >
                    {!known && !fixed && <option value={from}>{from}</option>}
                    {RANGES.map(([value, text]) => (
                        <option key={value} value={value}>
                            {text}
                        </option>
                    ))}
                    <option value="custom">Custom dates</option>
                </select>
            </Control>
            {fixed && (
                <>
                    <Control label="From">
                        <input type="date" value={from.slice(0, 10)} onChange={(event) => set(event.currentTarget.value, to)} />
                    </Control>
                    <Control label="To">
                        <input type="date" value={to.slice(0, 10)} onChange={(event) => set(from, event.currentTarget.value)} />
                    </Control>
                </>
            )}
        </>
    );
}

const INTERVALS = ['hour', 'day', 'week', 'month'];

/** The node's `interval` (a bucket of the project's time). */
export function IntervalPicker({ query, onChange }: { query: QueryNode; onChange: (query: QueryNode) => void }) {
    const interval = typeof query.interval === 'string' ? query.interval : 'day';
    return (
        <Control label="Interval">
            <select value={interval} onChange={(event) => onChange(withField(query, 'interval', event.currentTarget.value))}>
                {INTERVALS.map((value) => (
                    <option key={value} value={value}>
                        {value[0]!.toUpperCase() + value.slice(1)}
                    </option>
                ))}
            </select>
        </Control>
    );
}

/** `breakdownFilter`: none, or one event or person property. */
export function BreakdownPicker({ project, query, onChange }: { project: Project; query: QueryNode; onChange: (query: QueryNode) => void }) {
    const filter = record(query.breakdownFilter);
    const type = filter.breakdown_type === 'person' ? 'person' : filter.breakdown_type === 'event' ? 'event' : '';
    const property = typeof filter.breakdown === 'string' ? filter.breakdown : '';
    const set = (nextType: string, nextProperty: string) =>
        onChange(withField(query, 'breakdownFilter', nextType ? { breakdown_type: nextType, breakdown: nextProperty } : undefined));
    return (
        <>
            <Control label="Breakdown">
                <select value={type} onChange={(event) => set(event.currentTarget.value, property)}>
                    <option value="">None</option>
                    <option value="event">Event property</option>
                    <option value="person">Person property</option>
                </select>
            </Control>
            {type && (
                <Control label="By">
                    <PropertyPicker project={project} type={type} value={property} label="Breakdown property" onChange={(name) => set(type, name)} />
                </Control>
            )}
        </>
    );
}

/** A result's root: `#insight-result`, with the node it shows as JSON in `data-query`. */
export function ResultRoot({ query, kind, compact, children }: { query: QueryNode; kind: string; compact?: boolean | undefined; children: ComponentChildren }) {
    return (
        <div id="insight-result" class={`kind-result kind-${kind}${compact ? ' compact' : ''}`} data-query={JSON.stringify(query)}>
            {children}
        </div>
    );
}

/** The offset of `timeZone` from UTC at `at` (milliseconds). */
function zoneOffset(at: number, timeZone: string): number {
    try {
        const parts = new Intl.DateTimeFormat('en-US', {
            timeZone,
            hourCycle: 'h23',
            year: 'numeric',
            month: '2-digit',
            day: '2-digit',
            hour: '2-digit',
            minute: '2-digit',
            second: '2-digit',
        }).formatToParts(new Date(at));
        const part = (type: string) => Number(parts.find((one) => one.type === type)?.value ?? 0);
        return Date.UTC(part('year'), part('month') - 1, part('day'), part('hour'), part('minute'), part('second')) - Math.floor(at / 1000) * 1000;
    } catch {
        return 0;
    }
}

/** Unix seconds of a day or time the API answers (`2024-03-05`, `2024-03-05 13:00:00`, or with
 * an offset), a wall time of the project's zone when it has no offset. */
export function zonedSeconds(text: string, timeZone: string): number {
    const match = /^(\d{4})-(\d{2})-(\d{2})(?:[ T](\d{2}):(\d{2})(?::(\d{2}))?)?/.exec(text);
    if (!match || /(?:[zZ]|[+-]\d{2}:?\d{2})$/.test(text.slice(10))) return Math.floor(Date.parse(text) / 1000);
    const wall = Date.UTC(Number(match[1]), Number(match[2]) - 1, Number(match[3]), Number(match[4] ?? 0), Number(match[5] ?? 0), Number(match[6] ?? 0));
    const first = wall - zoneOffset(wall, timeZone);
    return Math.floor((wall - zoneOffset(first, timeZone)) / 1000);
}

/** A number as a percentage with one decimal (`40`, `66.7`): display only. */
export function percent(part: number, whole: number): number {
    return whole > 0 ? Math.round((part / whole) * 1000) / 10 : 0;
}

/** Seconds as a person reads a duration (`45s`, `5m 3s`, `2h 10m`, `3d 4h`). */
export function duration(seconds: number): string {
    const whole = Math.round(seconds);
    const two = (big: number, bigUnit: string, small: number, smallUnit: string) => (small ? `${big}${bigUnit} ${small}${smallUnit}` : `${big}${bigUnit}`);
    if (whole < 60) return `${whole}s`;
    if (whole < 3600) return two(Math.floor(whole / 60), 'm', whole % 60, 's');
    if (whole < 86400) return two(Math.floor(whole / 3600), 'h', Math.floor((whole % 3600) / 60), 'm');
    return two(Math.floor(whole / 86400), 'd', Math.floor((whole % 86400) / 3600), 'h');
}

/** Series of events (`EventsNode`s): the event, and the extras a kind puts in each row. */
export interface SeriesItem extends Json {
    kind: string;
    event?: string | null;
    name?: string;
}

export function seriesOf(query: QueryNode): SeriesItem[] {
    return list(query.series).map((item) => record(item) as SeriesItem);
}

export function eventNode(event: string | null, extra: Json = {}): SeriesItem {
    return { kind: 'EventsNode', event, name: event ?? 'All events', ...extra };
}

/** A list of event series: one row each (the event, then what `extra` adds), add and remove. */
export function SeriesList({ project, query, onChange, noun, min = 1, max = 10, extra }: {
    project: Project;
    query: QueryNode;
    onChange: (query: QueryNode) => void;
    noun: string;
    min?: number;
    max?: number;
    extra?: (item: SeriesItem, set: (item: SeriesItem) => void) => ComponentChildren;
}) {
    const items = seriesOf(query);
    const set = (index: number, item: SeriesItem) => onChange(withField(query, 'series', items.map((one, at) => (at === index ? item : one))));
    return (
        <ol class="kind-series">
            {items.map((item, index) => (
                <li key={index} class="kind-series-row">
                    <span class="kind-letter" aria-hidden="true">
                        {noun === 'Step' ? index + 1 : String.fromCharCode(65 + (index % 26))}
                    </span>
                    <EventPicker
                        project={project}
                        value={typeof item.event === 'string' ? item.event : null}
                        label={`${noun} ${index + 1} event`}
                        onChange={(event) => set(index, { ...item, event, name: event ?? 'All events' })}
                    />
                    {extra?.(item, (next) => set(index, next))}
                    {items.length > min && (
                        <button
                            type="button"
                            class="link kind-remove"
                            aria-label={`Remove ${noun.toLowerCase()} ${index + 1}`}
                            onClick={() => onChange(withField(query, 'series', items.filter((_, at) => at !== index)))}
                        >
                            ✕
                        </button>
                    )}
                </li>
            ))}
            {items.length < max && (
                <li>
                    <button type="button" class="secondary kind-add" onClick={() => onChange(withField(query, 'series', [...items, eventNode('$pageview')]))}>
                        Add {noun.toLowerCase()}
                    </button>
                </li>
            )}
        </ol>
    );
}

/** The node a response answers: the API echoes it as `query` (a page may hand a Result the
 * newest node with the answer to the one before while the new one is waiting to run); the
 * given node when the response has none (a saved insight's). */
export function answered(query: QueryNode, response: Record<string, unknown>): QueryNode {
    const echoed = record(response.query);
    return typeof echoed.kind === 'string' && echoed.kind === query.kind ? (echoed as QueryNode) : query;
}

/** A number the API answered, as written for a person (fractions of averages kept to two places). */
export function formatValue(value: number): string {
    return Number.isInteger(value) ? formatCount(value) : value.toLocaleString(undefined, { maximumFractionDigits: 2 });
}

/** `next` (made from `base`) laid over `latest`: the fields `next` changed (and inside a filter
 * object, the keys it changed), so that two changes made before the page renders again (a text
 * box's change on blur, then the click that blurred it) both stay. */
function laidOver(base: Json, next: Json, latest: Json): Json {
    const merged: Json = { ...latest };
    for (const name of new Set([...Object.keys(base), ...Object.keys(next)])) {
        if (next[name] === base[name]) continue;
        if (!(name in next)) delete merged[name];
        else if (isPlain(next[name]) && isPlain(base[name]) && isPlain(latest[name]))
            merged[name] = laidOver(base[name] as Json, next[name] as Json, latest[name] as Json);
        else merged[name] = next[name];
    }
    return merged;
}

function isPlain(value: unknown): boolean {
    return !!value && typeof value === 'object' && !Array.isArray(value);
}

/** A kind's editor whose changes compose: each is made from the node as the last change left
 * it, not from the node of the last render (see `laidOver`). */
export function composing(Inner: ComponentType<EditorProps>): ComponentType<EditorProps> {
    return function Editor({ project, query, onChange }: EditorProps) {
        const latest = useRef(query);
        const seen = useRef(query);
        if (seen.current !== query) {
            seen.current = query;
            latest.current = query;
        }
        const change = (next: QueryNode) => {
            latest.current = laidOver(query, next, latest.current) as QueryNode;
            onChange(latest.current);
        };
        return <Inner project={project} query={query} onChange={change} />;
    };
}

/** Each series' total beside the chart, a row per series in the chart's colors (not on a tile). */
export function SeriesTotals({ heading, valueHeading, rows, format = formatValue }: {
    heading: string;
    valueHeading: string;
    rows: { label: string | undefined; value: number }[];
    format?: (value: number) => string;
}) {
    return (
        <div class="table-scroll">
            <table class="table kind-legend">
                <thead>
                    <tr>
                        <th scope="col">{heading}</th>
                        <th scope="col" class="num">
                            {valueHeading}
                        </th>
                    </tr>
                </thead>
                <tbody>
                    {rows.map((row, index) => (
                        <tr key={index}>
                            <th scope="row">
                                <span class={`kind-swatch color-${index % 8}`} aria-hidden="true" />
                                {row.label}
                            </th>
                            <td class="num">
                                <data value={String(row.value)}>{format(row.value)}</data>
                            </td>
                        </tr>
                    ))}
                </tbody>
            </table>
        </div>
    );
}
