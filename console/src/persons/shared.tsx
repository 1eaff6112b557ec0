// What the Events explorer and a person's timeline share: the EventsQuery they ask (PostHog's
// default columns of its events table), a row of its answer as the page reads it, the table of
// events with a row opening onto its properties, and a searchable table of properties.

import { useState } from 'preact/hooks';
import { Link } from '../router';
import { timeFormatter } from '../format';
import { ScrollTable } from '../ui-list';

/** PostHog's default columns of an events table (`defaultDataTableColumns(EventsQuery)`). */
export const EVENT_SELECT = [
    '*',
    'event',
    'person_display_name -- Person',
    'coalesce(properties.$current_url, properties.$screen_name) -- Url / Screen',
    'properties.$lib',
    'timestamp',
] as const;

/** Rows asked for at a time. */
export const EVENTS_PAGE = 50;

/** A property filter of an EventsQuery (PostHog's `EventPropertyFilter`). */
export interface PropertyFilter {
    type: 'event' | 'person';
    key: string;
    operator: string;
    value?: string | string[];
}

export interface EventsQueryNode {
    kind: 'EventsQuery';
    select: string[];
    after: string;
    orderBy: string[];
    limit: number;
    offset: number;
    event?: string;
    personId?: string;
    properties?: PropertyFilter[];
}

/** The EventsQuery both pages ask: newest first, `limit` rows from `offset`. */
export function eventsQuery(options: { after: string; offset: number; event?: string | null; personId?: string; properties?: PropertyFilter[] }): EventsQueryNode {
    const node: EventsQueryNode = {
        kind: 'EventsQuery',
        select: [...EVENT_SELECT],
        after: options.after,
        orderBy: ['timestamp DESC'],
        limit: EVENTS_PAGE,
        offset: options.offset,
    };
    if (options.event) node.event = options.event;
    if (options.personId) node.personId = options.personId;
    if (options.properties?.length) node.properties = options.properties;
    return node;
}

/** The answer of an EventsQuery. */
export interface EventsAnswer {
    columns: string[];
    results: unknown[][];
    hasMore: boolean;
}

/** One event as the page shows it. */
export interface EventRow {
    uuid: string;
    event: string;
    distinctId: string;
    properties: Record<string, unknown>;
    person: { name: string; id: string | null };
    url: string | null;
    lib: string | null;
    timestamp: string;
}

/** A row of the answer to `eventsQuery` (its columns in EVENT_SELECT's order). */
export function eventRow(row: unknown[]): EventRow {
    const star = (row[0] ?? {}) as { uuid?: string; event?: string; distinct_id?: string; properties?: Record<string, unknown> };
    const person = (row[2] ?? {}) as { display_name?: unknown; id?: unknown; distinct_id?: unknown };
    const text = (value: unknown) => (value === null || value === undefined || value === '' ? null : String(value));
    return {
        uuid: String(star.uuid ?? ''),
        event: String(row[1] ?? star.event ?? ''),
        distinctId: String(star.distinct_id ?? person.distinct_id ?? ''),
        properties: star.properties && typeof star.properties === 'object' ? star.properties : {},
        person: { name: text(person.display_name) ?? String(star.distinct_id ?? ''), id: text(person.id) },
        url: text(row[3]),
        lib: text(row[4]),
        timestamp: String(row[5] ?? ''),
    };
}

/** A property's value as text (objects as JSON). */
export function valueText(value: unknown): string {
    if (value === null) return 'null';
    if (value === undefined) return '';
    if (typeof value === 'object') return JSON.stringify(value);
    return String(value);
}

/** The events, newest first; a row's button opens its properties beneath it. */
export function EventsTable({ rows, timeZone, showPerson = true }: { rows: EventRow[]; timeZone: string; showPerson?: boolean }) {
    const [open, setOpen] = useState<Set<string>>(new Set());
    const time = timeFormatter(timeZone);
    const columns = showPerson ? 5 : 4;
    function toggle(uuid: string) {
        setOpen((previous) => {
            const next = new Set(previous);
            if (next.has(uuid)) next.delete(uuid);
            else next.add(uuid);
            return next;
        });
    }
    return (
        <ScrollTable
            class="events-table"
            head={
                <>
                    <th>Event</th>
                    {showPerson && <th>Person</th>}
                    <th>URL / Screen</th>
                    <th>Library</th>
                    <th>Time</th>
                </>
            }
        >
            {rows.map((row) => {
                const expanded = open.has(row.uuid);
                return [
                    <tr key={row.uuid} class={expanded ? 'event-row open' : 'event-row'} data-uuid={row.uuid}>
                        <td class="event-name">
                            <button
                                type="button"
                                class="event-expander"
                                aria-expanded={expanded}
                                aria-label={`${expanded ? 'Hide' : 'Show'} the properties of ${row.event}`}
                                onClick={() => toggle(row.uuid)}
                            >
                                {expanded ? '▾' : '▸'}
                            </button>
                            <span class="event-label">{row.event}</span>
                        </td>
                        {showPerson && (
                            <td class="event-person">
                                {row.person.id ? <Link href={`/persons/${encodeURIComponent(row.person.id)}`}>{row.person.name}</Link> : row.person.name}
                            </td>
                        )}
                        <td class="event-url">{row.url ?? <span class="muted">—</span>}</td>
                        <td class="event-lib">{row.lib ?? <span class="muted">—</span>}</td>
                        <td class="event-time">
                            <time dateTime={row.timestamp}>{row.timestamp ? time(new Date(row.timestamp)) : ''}</time>
                        </td>
                    </tr>,
                    expanded ? (
                        <tr key={`${row.uuid}-properties`} class="event-properties">
                            <td colSpan={columns}>
                                <p class="event-meta muted">
                                    Distinct id <code>{row.distinctId}</code> · uuid <code>{row.uuid}</code>
                                </p>
                                <PropertiesTable properties={row.properties} label={`Properties of ${row.event}`} />
                            </td>
                        </tr>
                    ) : null,
                ];
            })}
        </ScrollTable>
    );
}

/** Properties as a two-column table, sorted by key, with a search box over keys and values;
 * `onDelete` adds a delete button to each row. */
export function PropertiesTable({
    properties,
    label,
    onDelete,
    busyKey,
}: {
    properties: Record<string, unknown>;
    label: string;
    onDelete?: (key: string) => void;
    busyKey?: string | null;
}) {
    const [search, setSearch] = useState('');
    const needle = search.trim().toLowerCase();
    const entries = Object.entries(properties)
        .sort(([a], [b]) => a.localeCompare(b))
        .filter(([key, value]) => !needle || key.toLowerCase().includes(needle) || valueText(value).toLowerCase().includes(needle));
    const total = Object.keys(properties).length;
    return (
        <div class="properties">
            {total > 0 && (
                <input
                    type="search"
                    class="properties-search"
                    placeholder="Search properties"
                    aria-label={`Search ${label.toLowerCase()}`}
                    value={search}
                    onInput={(event) => setSearch(event.currentTarget.value)}
                />
            )}
            {total === 0 ? (
                <p class="muted">No properties.</p>
            ) : (
                <div class="table-scroll">
                    <table class="table properties-table" aria-label={label}>
                        <thead>
                            <tr>
                                <th>Property</th>
                                <th>Value</th>
                                {onDelete && <th class="actions">
                                    <span class="visually-hidden">Actions</span>
                                </th>}
                            </tr>
                        </thead>
                        <tbody>
                            {entries.map(([key, value]) => (
                                <tr key={key} data-key={key}>
                                    <th scope="row" class="property-key">
                                        <code>{key}</code>
                                    </th>
                                    <td class="property-value">{valueText(value)}</td>
                                    {onDelete && (
                                        <td class="actions">
                                            <button type="button" class="link property-delete" disabled={busyKey === key} onClick={() => onDelete(key)} aria-label={`Delete ${key}`}>
                                                Delete
                                            </button>
                                        </td>
                                    )}
                                </tr>
                            ))}
                        </tbody>
                    </table>
                    {entries.length === 0 && <p class="muted">No property matches “{search}”.</p>}
                </div>
            )}
        </div>
    );
}
