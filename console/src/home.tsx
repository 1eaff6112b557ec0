// Home: the project's last 30 days at a glance (events, users, events per day, top events and
// pages) and a live tail of the newest events. Every number is the answer of a HogQL query
// (queries.json), shown as the API gave it.

import type { ComponentChildren } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { ApiError, type Project, type QueryResult, api, asApiError } from './api';
import { DailyChart } from './chart';
import { asNumber, asText, formatCount, timeFormatter } from './format';
import queries from './queries.json';
import { ErrorText } from './ui';

/** How often the live tail asks for the newest events. */
const POLL_MS = 2000;

type Loadable<T> = { state: 'loading' } | { state: 'done'; value: T } | { state: 'failed'; error: ApiError };

function useQuery(projectId: number, sql: string): Loadable<QueryResult> {
    const [loadable, setLoadable] = useState<Loadable<QueryResult>>({ state: 'loading' });
    useEffect(() => {
        let current = true;
        setLoadable({ state: 'loading' });
        api.query(projectId, sql).then(
            (value) => current && setLoadable({ state: 'done', value }),
            (error) => current && setLoadable({ state: 'failed', error: asApiError(error) }),
        );
        return () => {
            current = false;
        };
    }, [projectId, sql]);
    return loadable;
}

/** The values of the column `name` in every row, in row order. */
function column(result: QueryResult, name: string): unknown[] {
    const index = result.columns.indexOf(name);
    return result.results.map((row) => (index < 0 ? null : row[index]));
}

export function Home({ project }: { project: Project }) {
    const summary = useQuery(project.id, queries.summary);
    const daily = useQuery(project.id, queries.daily);
    const topEvents = useQuery(project.id, queries.top_events);
    const topPages = useQuery(project.id, queries.top_pages);

    return (
        <main class="page home">
            <div class="page-title">
                <h1>Last 30 days</h1>
                <p class="muted">Days and times in {project.timezone}</p>
            </div>
            <section class="stats" aria-label="Totals">
                <Stat id="total-events" label="Events" loadable={summary} name="events" />
                <Stat id="unique-users" label="Unique users" loadable={summary} name="users" />
            </section>
            <section class="panel" aria-labelledby="daily-title">
                <h2 id="daily-title">Events per day</h2>
                <Loaded loadable={daily}>
                    {(result) => <DailyChart result={result} timezone={project.timezone} />}
                </Loaded>
            </section>
            <div class="columns">
                <section class="panel" aria-labelledby="top-events-title">
                    <h2 id="top-events-title">Top events</h2>
                    <Ranking id="top-events" loadable={topEvents} label="event" count="events" heading={['Event', 'Events']} empty="No events in the last 30 days." />
                </section>
                <section class="panel" aria-labelledby="top-pages-title">
                    <h2 id="top-pages-title">Top pages</h2>
                    <Ranking id="top-pages" loadable={topPages} label="page" count="views" heading={['Page', 'Pageviews']} empty="No pageviews in the last 30 days." />
                </section>
            </div>
            <LiveTail project={project} />
        </main>
    );
}

function Loaded({ loadable, children }: { loadable: Loadable<QueryResult>; children: (result: QueryResult) => ComponentChildren }) {
    if (loadable.state === 'loading') return <p class="muted loading">Loading…</p>;
    if (loadable.state === 'failed') return <ErrorText error={loadable.error} />;
    return <>{children(loadable.value)}</>;
}

function Stat({ id, label, loadable, name }: { id: string; label: string; loadable: Loadable<QueryResult>; name: string }) {
    return (
        <div class="panel stat">
            <h2 class="stat-label">{label}</h2>
            <Loaded loadable={loadable}>
                {(result) => {
                    const value = asNumber(column(result, name)[0]);
                    return (
                        <data class="stat-value" id={id} value={String(value)}>
                            {formatCount(value)}
                        </data>
                    );
                }}
            </Loaded>
        </div>
    );
}

interface RankingProps {
    id: string;
    loadable: Loadable<QueryResult>;
    label: string;
    count: string;
    heading: [string, string];
    empty: string;
}

function Ranking({ id, loadable, label, count, heading, empty }: RankingProps) {
    return (
        <Loaded loadable={loadable}>
            {(result) => {
                const labels = column(result, label).map(asText);
                const counts = column(result, count).map(asNumber);
                if (labels.length === 0) return <p class="muted">{empty}</p>;
                return (
                    <table class="ranking" id={id}>
                        <thead>
                            <tr>
                                <th scope="col">{heading[0]}</th>
                                <th scope="col" class="num">
                                    {heading[1]}
                                </th>
                            </tr>
                        </thead>
                        <tbody>
                            {labels.map((text, index) => (
                                <tr key={text}>
                                    <td class="label">{text}</td>
                                    <td class="num">
                                        <data value={String(counts[index])}>{formatCount(counts[index] ?? 0)}</data>
                                    </td>
                                </tr>
                            ))}
                        </tbody>
                    </table>
                );
            }}
        </Loaded>
    );
}

interface TailRow {
    uuid: string;
    event: string;
    distinctId: string;
    timestamp: string;
    url: string;
    /** Not in the previous answer: highlighted once. */
    fresh: boolean;
}

function LiveTail({ project }: { project: Project }) {
    const [rows, setRows] = useState<TailRow[] | null>(null);
    const [error, setError] = useState<ApiError | null>(null);
    const seen = useRef<Set<string> | null>(null);

    useEffect(() => {
        let stopped = false;
        let timer: ReturnType<typeof setTimeout> | undefined;
        const schedule = () => {
            if (!stopped) timer = setTimeout(poll, POLL_MS);
        };
        async function poll() {
            // A hidden tab does not poll; it catches up when shown again.
            if (document.hidden) return schedule();
            try {
                const result = await api.query(project.id, queries.live);
                if (stopped) return;
                const previous = seen.current;
                const uuids = column(result, 'uuid').map(asText);
                const events = column(result, 'event').map(asText);
                const distinctIds = column(result, 'distinct_id').map(asText);
                const timestamps = column(result, 'timestamp').map(asText);
                const urls = column(result, 'url').map(asText);
                setRows(
                    uuids.map((uuid, index) => ({
                        uuid,
                        event: events[index] ?? '',
                        distinctId: distinctIds[index] ?? '',
                        timestamp: timestamps[index] ?? '',
                        url: urls[index] ?? '',
                        fresh: previous !== null && !previous.has(uuid),
                    })),
                );
                seen.current = new Set(uuids);
                setError(null);
            } catch (thrown) {
                if (stopped) return;
                setError(asApiError(thrown));
            }
            schedule();
        }
        void poll();
        return () => {
            stopped = true;
            clearTimeout(timer);
        };
    }, [project.id]);

    const time = timeFormatter(project.timezone);
    return (
        <section class="panel" aria-labelledby="live-title">
            <div class="panel-head">
                <h2 id="live-title">Live events</h2>
                <span class={error ? 'live-status stalled' : 'live-status'}>{error ? 'Retrying' : `Live · every ${POLL_MS / 1000} s`}</span>
            </div>
            {error && <ErrorText error={error} />}
            {rows === null && !error && <p class="muted loading">Loading…</p>}
            {rows !== null && rows.length === 0 && (
                <p class="muted">
                    No events yet. Send some with the project token <code>{project.api_token}</code>; they appear here within seconds.
                </p>
            )}
            {rows !== null && rows.length > 0 && (
                <table class="tail" id="live-tail">
                    <thead>
                        <tr>
                            <th scope="col">Time</th>
                            <th scope="col">Event</th>
                            <th scope="col">Distinct ID</th>
                            <th scope="col">URL</th>
                        </tr>
                    </thead>
                    <tbody>
                        {rows.map((row) => (
                            <tr key={row.uuid} class={row.fresh ? 'fresh' : undefined} data-uuid={row.uuid}>
                                <td class="time">
                                    <time dateTime={row.timestamp}>{row.timestamp ? time(new Date(row.timestamp)) : ''}</time>
                                </td>
                                <td class="event">{row.event}</td>
                                <td class="who">{row.distinctId}</td>
                                <td class="url">{row.url || <span class="muted">–</span>}</td>
                            </tr>
                        ))}
                    </tbody>
                </table>
            )}
        </section>
    );
}
