// One dashboard: its tiles on PostHog's 12-column grid (the tiles' `layouts.sm`, one column on a
// phone), each insight tile its kind's compact Result; the dashboard's filters (a date range and
// event property filters, saved on the dashboard, which the API lays over every tile); Refresh
// (recomputed by the API), tile removal, rename.
//
// The tiles' answers come from `GET /dashboards/:id/?refresh=...` in one request: the API lays
// the dashboard's filters over each tile's node exactly as it documents (docs/dashboards.md), runs
// the tiles a few at a time within the project's query slots, and caches each answer under the
// node it ran, so what a tile shows is the API's answer for that tile, never a node rebuilt here.

import { useEffect, useRef, useState } from 'preact/hooks';
import { type ApiError, type Project, asApiError, http, projectPath, withParams } from '../api';
import { timeFormatter } from '../format';
import type { PersonsRequest, QueryNode } from '../insights/kind';
import { kindOf } from '../insights/kinds';
import { type Insight, KindResult, innerQuery, insightName, insightResponse } from '../insights/page-run';
import { PersonsDialog } from '../insights/persons';
import type { PageProps } from '../pages';
import { Link } from '../router';
import { ErrorText, Field, PageTitle, fieldError } from '../ui';
import { DeleteButton, NameDescriptionFields, SubmitCancel } from '../ui-form';

interface Layout {
    x?: number;
    y?: number;
    w?: number;
    h?: number;
}

interface Tile {
    id: number;
    insight: Insight | null;
    text: { id: number; body: string } | null;
    layouts: { sm?: Layout; xs?: Layout } | null;
    color: string | null;
}

interface PropertyFilter {
    key: string;
    value: unknown;
    operator?: string;
    type?: string;
}

interface Filters {
    date_from?: string | null;
    date_to?: string | null;
    properties?: PropertyFilter[] | null;
    explicitDate?: boolean | null;
}

interface Dashboard {
    id: number;
    name: string | null;
    description: string;
    filters: Filters | null;
    last_refresh: string | null;
    tiles: Tile[];
}

const DATE_PRESETS: [string, string][] = [
    ['', 'Each insight’s own dates'],
    ['-24h', 'Last 24 hours'],
    ['-7d', 'Last 7 days'],
    ['-14d', 'Last 14 days'],
    ['-30d', 'Last 30 days'],
    ['-90d', 'Last 90 days'],
    ['mStart', 'This month'],
    ['yStart', 'This year'],
    ['all', 'All time'],
    ['custom', 'Custom…'],
];

export function DashboardPage({ project, id }: PageProps & { id: string }) {
    const [dashboard, setDashboard] = useState<Dashboard | null>(null);
    const [error, setError] = useState<ApiError | null>(null);
    const [loading, setLoading] = useState<string | null>('blocking');
    const [renaming, setRenaming] = useState(false);
    const [writing, setWriting] = useState(false);
    const [persons, setPersons] = useState<PersonsRequest | null>(null);
    const sequence = useRef(0);
    const path = projectPath(project.id, `dashboards/${encodeURIComponent(id)}/`);

    /** Reads the dashboard with its tiles answered in `refresh` mode (PostHog's names). With
     * `cacheFirst`, the cached answers show at once, then a second read computes the tiles the
     * cache did not have. */
    async function load(refresh: string, cacheFirst = false) {
        const mine = ++sequence.current;
        setLoading(refresh);
        setError(null);
        try {
            if (cacheFirst) {
                const cached = await http.get<Dashboard>(withParams(path, { refresh: 'force_cache' }));
                if (mine !== sequence.current) return;
                setDashboard(cached);
                const missing = cached.tiles.some((tile) => tile.insight && (tile.insight.result === null || tile.insight.result === undefined));
                if (!missing) return;
            }
            const answer = await http.get<Dashboard>(withParams(path, { refresh }));
            if (mine === sequence.current) setDashboard(answer);
        } catch (thrown) {
            if (mine === sequence.current) setError(asApiError(thrown));
        } finally {
            if (mine === sequence.current) setLoading(null);
        }
    }

    useEffect(() => {
        setDashboard(null);
        // The cached answers, then fresh ones computed for the tiles without.
        void load('blocking', true);
    }, [project.id, id]);

    async function patch(body: Record<string, unknown>): Promise<Dashboard | null> {
        setError(null);
        try {
            return await http.patch<Dashboard>(path, body);
        } catch (thrown) {
            setError(asApiError(thrown));
            return null;
        }
    }

    if (!dashboard) {
        return (
            <main class="page dashboard-page">
                {error ? <ErrorText error={error} /> : <p class="muted loading">Loading…</p>}
            </main>
        );
    }
    const when = timeFormatter(project.timezone);
    const name = dashboard.name || `Dashboard ${dashboard.id}`;
    return (
        <main class="page dashboard-page" data-dashboard-id={dashboard.id} aria-busy={loading !== null}>
            {renaming ? (
                <RenameDashboard
                    dashboard={dashboard}
                    onCancel={() => setRenaming(false)}
                    onSave={async (body) => {
                        const updated = await patch(body);
                        if (updated) {
                            setDashboard((current) => current && { ...current, name: updated.name, description: updated.description });
                            setRenaming(false);
                        }
                        return updated !== null;
                    }}
                    error={error}
                />
            ) : (
                <>
                    <PageTitle title={name}>
                        <button type="button" class="secondary" onClick={() => setRenaming(true)}>
                            Rename
                        </button>
                        <button type="button" class="secondary" onClick={() => setWriting(true)} disabled={writing}>
                            Add text
                        </button>
                        <button type="button" class="primary" disabled={loading !== null} onClick={() => load('force_blocking')}>
                            {loading === 'force_blocking' ? 'Refreshing…' : 'Refresh'}
                        </button>
                        <DeleteButton question={`Delete the dashboard “${name}”? Its insights stay.`} to="/dashboards" onDelete={() => patch({ deleted: true })} />
                    </PageTitle>
                    {dashboard.description && <p class="dashboard-description">{dashboard.description}</p>}
                    {error && <ErrorText error={error} />}
                </>
            )}
            <p class="muted dashboard-meta">
                <Link href="/dashboards">All dashboards</Link>
                {dashboard.last_refresh ? ` · computed ${when(new Date(dashboard.last_refresh))}` : ''}
                {loading !== null && <span role="status"> · {loading === 'force_blocking' ? 'Recomputing every tile…' : 'Loading the tiles…'}</span>}
            </p>
            <FilterBar
                key={JSON.stringify(dashboard.filters ?? {})}
                filters={dashboard.filters ?? {}}
                busy={loading !== null}
                onApply={async (filters) => {
                    const updated = await patch({ filters });
                    if (updated) await load('blocking');
                }}
            />
            {writing && (
                <TextForm
                    onCancel={() => setWriting(false)}
                    onAdd={async (body) => {
                        // A text tile without `id` is added (PostHog's tile edit), full width at the end.
                        const updated = await patch({ tiles: [{ text: { body } }] });
                        if (!updated) return false;
                        setWriting(false);
                        await load('blocking', true);
                        return true;
                    }}
                    error={error}
                />
            )}
            {dashboard.tiles.length === 0 ? (
                <section class="panel">
                    <p class="muted">
                        No insights on this dashboard yet. Open an <Link href="/insights">insight</Link> and choose “Add to dashboard”.
                    </p>
                </section>
            ) : (
                <div class={loading ? 'dashboard-grid insight-stale' : 'dashboard-grid'}>
                    {dashboard.tiles.map((tile) => (
                        <TileView
                            key={tile.id}
                            project={project}
                            tile={tile}
                            filters={dashboard.filters ?? {}}
                            busy={loading !== null}
                            onPersons={setPersons}
                            onRemove={async () => {
                                const title = tile.insight ? insightName(tile.insight) : 'this text';
                                if (!window.confirm(`Remove “${title}” from the dashboard?`)) return;
                                const updated = await patch({ tiles: [{ id: tile.id, deleted: true }] });
                                if (updated) setDashboard((current) => current && { ...current, tiles: current.tiles.filter((other) => other.id !== tile.id) });
                            }}
                        />
                    ))}
                </div>
            )}
            {persons && <PersonsDialog project={project} request={persons} onClose={() => setPersons(null)} />}
        </main>
    );
}

/** The tile's node as the API ran it: the dashboard's date range over the insight's own (the
 * properties are ANDed by the API; the Result only reads the dates, to label its points). */
function tileQuery(query: QueryNode, filters: Filters): QueryNode {
    if (!filters.date_from && !filters.date_to) return query;
    if (query.kind === 'HogQLQuery') return query;
    return { ...query, dateRange: { ...((query.dateRange as object | undefined) ?? {}), date_from: filters.date_from ?? null, date_to: filters.date_to ?? null } };
}

function TileView({ project, tile, filters, busy, onPersons, onRemove }: {
    project: Project;
    busy: boolean;
    tile: Tile;
    filters: Filters;
    onPersons: (request: PersonsRequest) => void;
    onRemove: () => void;
}) {
    // PostHog's `sm` layout places the tile; a tile without one flows after the others (half
    // the width; a text a third of an insight's height).
    const layout = tile.layouts?.sm ?? {};
    const w = Math.min(Math.max(layout.w ?? (tile.text ? 12 : 6), 1), 12);
    const h = Math.max(layout.h ?? (tile.text ? 2 : 5), 1);
    const placed = typeof layout.x === 'number' && typeof layout.y === 'number';
    const x = placed ? Math.min(Math.max(layout.x!, 0), 12 - w) + 1 : 'auto';
    const y = placed ? Math.max(layout.y!, 0) + 1 : 'auto';
    const place = { '--tile-x': String(x), '--tile-w': String(w), '--tile-y': String(y), '--tile-h': String(h) };
    const insight = tile.insight;
    const status = insight?.query_status as { error?: boolean; error_message?: string | null } | null | undefined;
    const query = insight?.query ? tileQuery(innerQuery(insight.query), filters) : null;
    return (
        <article class={`tile panel${tile.color ? ` tile-${tile.color}` : ''}`} style={place} data-tile-id={tile.id} data-insight-id={insight?.id}>
            <header class="tile-head">
                {insight ? (
                    <h2>
                        <Link href={`/insights/${insight.short_id || insight.id}`}>{insightName(insight)}</Link>
                    </h2>
                ) : (
                    <h2 class="visually-hidden">Text</h2>
                )}
                <button type="button" class="link tile-remove" aria-label={`Remove ${insight ? insightName(insight) : 'text'} from the dashboard`} onClick={onRemove}>
                    Remove
                </button>
            </header>
            {insight?.description && <p class="muted tile-description">{insight.description}</p>}
            {tile.text && <p class="tile-text">{tile.text.body}</p>}
            {insight &&
                (status?.error ? (
                    <p class="form-error" role="alert">
                        {status.error_message ?? 'The query failed.'}
                    </p>
                ) : insight.result === null || insight.result === undefined || !query ? (
                    <p class="muted">{busy ? 'Computing…' : 'Not computed yet: Refresh computes it.'}</p>
                ) : (
                    <KindResult project={project} kind={kindOf(query)} query={query} response={insightResponse(insight)} onPersons={onPersons} compact />
                ))}
        </article>
    );
}

function TextForm({ onAdd, onCancel, error }: { onAdd: (body: string) => Promise<boolean>; onCancel: () => void; error: ApiError | null }) {
    const [body, setBody] = useState('');
    const [busy, setBusy] = useState(false);
    return (
        <form
            class="panel dashboard-rename"
            onSubmit={async (event) => {
                event.preventDefault();
                setBusy(true);
                await onAdd(body.trim());
                setBusy(false);
            }}
        >
            <Field label="Text" error={fieldError(error, 'tiles')}>
                <textarea name="text" rows={3} value={body} autoFocus onInput={(event) => setBody(event.currentTarget.value)} />
            </Field>
            <SubmitCancel submit="Add to the dashboard" disabled={busy || !body.trim()} onCancel={onCancel} />
        </form>
    );
}

function RenameDashboard({ dashboard, onSave, onCancel, error }: {
    dashboard: Dashboard;
    onSave: (body: Record<string, unknown>) => Promise<boolean>;
    onCancel: () => void;
    error: ApiError | null;
}) {
    const [name, setName] = useState(dashboard.name ?? '');
    const [description, setDescription] = useState(dashboard.description ?? '');
    const [busy, setBusy] = useState(false);
    return (
        <form
            class="panel dashboard-rename"
            onSubmit={async (event) => {
                event.preventDefault();
                setBusy(true);
                await onSave({ name: name.trim(), description: description.trim() });
                setBusy(false);
            }}
        >
            <NameDescriptionFields name={name} description={description} onName={setName} onDescription={setDescription} error={error} />
            <SubmitCancel submit="Save" disabled={busy} onCancel={onCancel} />
        </form>
    );
}

/** The dashboard's filters: a date range and event property equalities, saved on the dashboard
 * (PATCH `filters`), which the API lays over every tile. */
function FilterBar({ filters, busy, onApply }: { filters: Filters; busy: boolean; onApply: (filters: Filters) => Promise<void> }) {
    const known = DATE_PRESETS.some(([value]) => value === (filters.date_from ?? '')) && !filters.date_to;
    const [preset, setPreset] = useState(known ? (filters.date_from ?? '') : 'custom');
    const [from, setFrom] = useState(known ? '' : (filters.date_from ?? ''));
    const [to, setTo] = useState(known ? '' : (filters.date_to ?? ''));
    const [properties, setProperties] = useState<PropertyFilter[]>(filters.properties ?? []);
    const [key, setKey] = useState('');
    const [value, setValue] = useState('');
    const active = !!(filters.date_from || filters.date_to || filters.properties?.length);

    function built(): Filters {
        const next: Filters = {};
        if (preset === 'custom') {
            if (from) next.date_from = from;
            if (to) next.date_to = to;
        } else if (preset) next.date_from = preset;
        const all = key.trim() ? [...properties, { key: key.trim(), value: value, operator: 'exact', type: 'event' }] : properties;
        if (all.length) next.properties = all;
        return next;
    }

    return (
        <form
            class="panel dashboard-filters"
            aria-label="Dashboard filters"
            onSubmit={async (event) => {
                event.preventDefault();
                await onApply(built());
            }}
        >
            <div class="toolbar">
                <label class="field">
                    <span class="field-label">Date range</span>
                    <select name="date-range" value={preset} onChange={(event) => setPreset(event.currentTarget.value)}>
                        {DATE_PRESETS.map(([option, label]) => (
                            <option key={option} value={option}>
                                {label}
                            </option>
                        ))}
                    </select>
                </label>
                {preset === 'custom' && (
                    <>
                        <label class="field">
                            <span class="field-label">From</span>
                            <input name="date-from" value={from} placeholder="2026-01-31 or -7d" onInput={(event) => setFrom(event.currentTarget.value)} />
                        </label>
                        <label class="field">
                            <span class="field-label">To</span>
                            <input name="date-to" value={to} placeholder="now" onInput={(event) => setTo(event.currentTarget.value)} />
                        </label>
                    </>
                )}
                <label class="field">
                    <span class="field-label">Event property</span>
                    <input name="property-key" value={key} placeholder="$browser" onInput={(event) => setKey(event.currentTarget.value)} />
                </label>
                <label class="field">
                    <span class="field-label">equals</span>
                    <input name="property-value" value={value} placeholder="Chrome" onInput={(event) => setValue(event.currentTarget.value)} />
                </label>
                <button type="submit" class="primary" disabled={busy}>
                    Apply filters
                </button>
                {active && (
                    <button type="button" class="secondary" disabled={busy} onClick={() => onApply({})}>
                        Clear filters
                    </button>
                )}
            </div>
            {properties.length > 0 && (
                <ul class="filter-chips">
                    {properties.map((filter, index) => (
                        <li key={`${filter.key}-${index}`} class="badge">
                            {filter.key} {filter.operator && filter.operator !== 'exact' ? filter.operator : '='} {JSON.stringify(filter.value)}
                            <button type="button" class="link" aria-label={`Remove the filter on ${filter.key}`} onClick={() => setProperties(properties.filter((_, other) => other !== index))}>
                                ✕
                            </button>
                        </li>
                    ))}
                </ul>
            )}
        </form>
    );
}
