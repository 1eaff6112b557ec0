// Events: the project's newest events through an EventsQuery (PostHog's default columns),
// filtered by an event name (from the event definitions) and by one event property (a key from
// the property definitions: is exactly, contains, or is set), within a time range; more rows
// on request ("Load more", the query's `offset` and `hasMore`). A row opens onto its
// properties and links to its person. The filters live in the address (`?event=&key=&op=&value=&after=`).

import { useEffect, useRef, useState } from 'preact/hooks';
import { type ApiError, type Paged, asApiError, http, projectPath, withParams } from '../api';
import type { PageProps } from '../pages';
import { runQuery } from '../query';
import { navigate } from '../router';
import { ErrorText, PageTitle } from '../ui';
import { type EventRow, EventsTable, type EventsAnswer, type PropertyFilter, eventRow, eventsQuery } from './shared';

/** Time ranges, as EventsQuery's `after` (PostHog's events explorer starts at the last 24 hours). */
const RANGES: [string, string][] = [
    ['-1h', 'Last hour'],
    ['-24h', 'Last 24 hours'],
    ['-7d', 'Last 7 days'],
    ['-30d', 'Last 30 days'],
    ['-90d', 'Last 90 days'],
    ['all', 'All time'],
];
const DEFAULT_RANGE = '-24h';

/** The operators offered, PostHog's names and words. */
const OPERATORS: [string, string][] = [
    ['exact', '= equals'],
    ['icontains', '∋ contains'],
    ['is_set', '✓ is set'],
];

interface Filters {
    event: string;
    key: string;
    operator: string;
    value: string;
    after: string;
}

function filtersOf(search: URLSearchParams): Filters {
    const operator = search.get('op') ?? 'exact';
    return {
        event: search.get('event') ?? '',
        key: search.get('key') ?? '',
        operator: OPERATORS.some(([name]) => name === operator) ? operator : 'exact',
        value: search.get('value') ?? '',
        after: search.get('after') ?? DEFAULT_RANGE,
    };
}

/** The filters as the address's query string. */
function addressOf(filters: Filters): string {
    return withParams('/events', {
        event: filters.event,
        key: filters.key,
        op: filters.key && filters.operator !== 'exact' ? filters.operator : null,
        value: filters.key && filters.operator !== 'is_set' ? filters.value : null,
        after: filters.after !== DEFAULT_RANGE ? filters.after : null,
    });
}

/** The property filter of the query, when one is complete. */
function propertyFilter(filters: Filters): PropertyFilter | null {
    if (!filters.key) return null;
    if (filters.operator === 'is_set') return { type: 'event', key: filters.key, operator: 'is_set', value: 'is_set' };
    if (filters.value === '') return null;
    return { type: 'event', key: filters.key, operator: filters.operator, value: filters.value };
}

interface Definition {
    id: string;
    name: string;
}

/** A list of definitions' names (up to 1000, by name): the pickers' choices. */
function useNames(path: string): string[] {
    const [names, setNames] = useState<string[]>([]);
    useEffect(() => {
        let current = true;
        http.get<Paged<Definition>>(path).then(
            (page) => current && setNames(page.results.map((definition) => definition.name)),
            () => current && setNames([]),
        );
        return () => {
            current = false;
        };
    }, [path]);
    return names;
}

interface Listing {
    rows: EventRow[];
    hasMore: boolean;
    loading: boolean;
    error: ApiError | null;
}

export default function Page({ project, location }: PageProps) {
    const filters = filtersOf(location.search);
    const eventNames = useNames(withParams(projectPath(project.id, 'event_definitions/'), { limit: 1000, ordering: 'name' }));
    const propertyNames = useNames(withParams(projectPath(project.id, 'property_definitions/'), { type: 'event', limit: 1000 }));
    const [draft, setDraft] = useState(filters);
    const [listing, setListing] = useState<Listing>({ rows: [], hasMore: false, loading: true, error: null });
    const running = useRef<AbortController | null>(null);
    const [round, setRound] = useState(0);

    const filter = propertyFilter(filters);
    const key = JSON.stringify([filters.event, filter, filters.after]);

    useEffect(() => setDraft(filters), [location.search.toString()]);

    /** Loads rows from `offset` (0: a fresh list, else appended). */
    async function load(offset: number) {
        running.current?.abort();
        const controller = new AbortController();
        running.current = controller;
        setListing((previous) => ({ ...previous, rows: offset === 0 ? [] : previous.rows, loading: true, error: null }));
        try {
            const node = eventsQuery({ after: filters.after, offset, event: filters.event || null, properties: filter ? [filter] : [] });
            const answer = await runQuery<EventsAnswer>(project.id, node, { signal: controller.signal });
            if (controller.signal.aborted) return;
            const rows = answer.results.map(eventRow);
            setListing((previous) => ({ rows: offset === 0 ? rows : [...previous.rows, ...rows], hasMore: answer.hasMore, loading: false, error: null }));
        } catch (thrown) {
            if (controller.signal.aborted) return;
            setListing((previous) => ({ ...previous, loading: false, error: asApiError(thrown) }));
        }
    }

    useEffect(() => {
        void load(0);
        return () => running.current?.abort();
    }, [project.id, key, round]);

    function apply(next: Filters) {
        navigate(addressOf(next), true);
    }

    const incomplete = filters.key !== '' && filter === null;

    return (
        <main class="page events-page">
            <PageTitle title="Events">
                <button type="button" class="secondary" disabled={listing.loading} onClick={() => setRound((value) => value + 1)}>
                    Reload
                </button>
            </PageTitle>
            <form
                class="panel events-filters"
                aria-label="Filters"
                onSubmit={(event) => {
                    event.preventDefault();
                    apply(draft);
                }}
            >
                <label class="field">
                    <span class="field-label">Event</span>
                    <select
                        name="event"
                        value={draft.event}
                        onChange={(event) => {
                            const next = { ...draft, event: event.currentTarget.value };
                            setDraft(next);
                            apply(next);
                        }}
                    >
                        <option value="">All events</option>
                        <NameOptions names={eventNames} current={draft.event} />
                    </select>
                </label>
                <label class="field">
                    <span class="field-label">Property</span>
                    <select name="key" value={draft.key} onChange={(event) => setDraft({ ...draft, key: event.currentTarget.value })}>
                        <option value="">Any</option>
                        <NameOptions names={propertyNames} current={draft.key} />
                    </select>
                </label>
                <label class="field">
                    <span class="field-label">Operator</span>
                    <select name="op" value={draft.operator} disabled={!draft.key} onChange={(event) => setDraft({ ...draft, operator: event.currentTarget.value })}>
                        {OPERATORS.map(([name, label]) => (
                            <option key={name} value={name}>
                                {label}
                            </option>
                        ))}
                    </select>
                </label>
                {draft.operator !== 'is_set' && (
                    <label class="field">
                        <span class="field-label">Value</span>
                        <input name="value" type="text" value={draft.value} disabled={!draft.key} onInput={(event) => setDraft({ ...draft, value: event.currentTarget.value })} />
                    </label>
                )}
                <label class="field">
                    <span class="field-label">Time range</span>
                    <select
                        name="after"
                        value={draft.after}
                        onChange={(event) => {
                            const next = { ...draft, after: event.currentTarget.value };
                            setDraft(next);
                            apply(next);
                        }}
                    >
                        {withCurrent(
                            RANGES.map(([value]) => value),
                            draft.after,
                        ).map((value) => (
                            <option key={value} value={value}>
                                {RANGES.find(([known]) => known === value)?.[1] ?? value}
                            </option>
                        ))}
                    </select>
                </label>
                <div class="filter-actions">
                    <button type="submit" class="secondary apply">
                        Apply
                    </button>
                    {(filters.event || filters.key || filters.after !== DEFAULT_RANGE) && (
                        <button type="button" class="secondary" onClick={() => apply({ event: '', key: '', operator: 'exact', value: '', after: DEFAULT_RANGE })}>
                            Clear
                        </button>
                    )}
                </div>
            </form>
            {incomplete && <p class="muted">Enter a value for {filters.key} to filter by it.</p>}
            <section class="panel" aria-label="Events" aria-busy={listing.loading}>
                {listing.error && <ErrorText error={listing.error} />}
                {listing.rows.length > 0 && <EventsTable rows={listing.rows} timeZone={project.timezone} />}
                {!listing.loading && !listing.error && listing.rows.length === 0 && <p class="muted persons-empty">No events match in this time range.</p>}
                {listing.loading && <p class="muted loading">Loading…</p>}
                {!listing.loading && listing.hasMore && (
                    <div class="events-more">
                        <button type="button" class="secondary" onClick={() => void load(listing.rows.length)}>
                            Load more
                        </button>
                    </div>
                )}
                {!listing.loading && listing.rows.length > 0 && (
                    <p class="muted events-count">
                        {listing.rows.length} {listing.rows.length === 1 ? 'event' : 'events'} shown{listing.hasMore ? '' : ', all that match'}
                    </p>
                )}
            </section>
        </main>
    );
}

/** `names`, with `current` among them even when the definitions do not (yet) list it. */
function withCurrent(names: string[], current: string): string[] {
    return current && !names.includes(current) ? [current, ...names] : names;
}

/** A select's options for `names` (with `current`), each its own label. */
function NameOptions({ names, current }: { names: string[]; current: string }) {
    return (
        <>
            {withCurrent(names, current).map((name) => (
                <option key={name} value={name}>
                    {name}
                </option>
            ))}
        </>
    );
}
