// A saved insight: its name and description (edited in place), its result (run through the
// query service, or recomputed with Refresh through the insight's `?refresh=` route), its query
// (the kind's editor, saved with PATCH), the dashboards it is on (PostHog's `dashboards` list),
// and soft deletion.

import { useState } from 'preact/hooks';
import { type ApiError, type Paged, type Project, asApiError, http, projectPath, withParams } from '../api';
import { timeFormatter } from '../format';
import type { PageProps } from '../pages';
import { Link } from '../router';
import { Dialog, ErrorText, Field, Loaded, PageTitle, Pager, fieldError, useLoad } from '../ui';
import { DeleteButton, NameDescriptionFields, SubmitCancel, useAction } from '../ui-form';
import type { PersonsRequest, QueryNode } from './kind';
import { kindOf } from './kinds';
import { type Insight, QueryJson, type Run, RunView, innerQuery, insightName, insightResponse, kindLabel, storedQuery, useQueryRun } from './page-run';
import { PersonsDialog } from './persons';

export interface DashboardBasic {
    id: number;
    name: string;
    description: string;
    pinned: boolean;
    tags?: string[];
    created_at: string;
    last_refresh?: string | null;
}

export function InsightPage({ project, id }: PageProps & { id: string }) {
    const [loaded, reload] = useLoad(() => http.get<Insight>(projectPath(project.id, `insights/${encodeURIComponent(id)}/`)), [project.id, id]);
    return (
        <Loaded loadable={loaded}>
            {(insight) => <SavedInsight key={insight.id} project={project} initial={insight} reload={reload} />}
        </Loaded>
    );
}

function SavedInsight({ project, initial }: { project: Project; initial: Insight; reload: () => void }) {
    const [insight, setInsight] = useState(initial);
    const path = projectPath(project.id, `insights/${insight.id}/`);
    const saved = insight.query ? innerQuery(insight.query) : null;
    const [draft, setDraft] = useState<QueryNode | null>(null);
    const query = draft ?? saved;
    const [round, setRound] = useState(0);
    const run = useQueryRun(project, query, draft ? 500 : 0, round);
    const [forced, setForced] = useState<{ text: string; run: Run } | null>(null);
    const [renaming, setRenaming] = useState(false);
    const { busy, error, setError, run: attempt } = useAction();
    const [adding, setAdding] = useState(false);
    const [persons, setPersons] = useState<PersonsRequest | null>(null);
    const kind = query ? kindOf(query) : null;
    const when = timeFormatter(project.timezone);

    async function patch(body: Record<string, unknown>): Promise<boolean> {
        return attempt(async () => {
            const updated = await http.patch<Insight>(path, body);
            setInsight(updated);
        });
    }

    async function refresh() {
        if (!query) return;
        const text = JSON.stringify(query);
        setForced({ text, run: { state: 'running', progress: null, cancel: () => setForced(null) } });
        try {
            const answer = await http.get<Insight>(withParams(path, { refresh: 'force_blocking' }));
            setInsight((previous) => ({ ...previous, last_refresh: answer.last_refresh ?? null }));
            setForced((current) => (current ? { text, run: { state: 'done', response: insightResponse(answer), query } } : null));
        } catch (thrown) {
            setForced((current) => (current ? { text, run: { state: 'failed', error: asApiError(thrown) } } : null));
        }
    }

    // A forced recomputation is shown while the query is the saved one.
    const shown = forced && !draft && query && forced.text === JSON.stringify(query) ? forced.run : run;
    return (
        <main class="page insight-page" data-insight-id={insight.id} data-query={query ? JSON.stringify(query) : ''}>
            {renaming ? (
                <Rename insight={insight} busy={busy} error={error} onCancel={() => { setRenaming(false); setError(null); }} onSave={async (body) => { if (await patch(body)) setRenaming(false); }} />
            ) : (
                <>
                    <PageTitle title={insightName(insight)}>
                        <button type="button" class="secondary" onClick={() => setRenaming(true)}>
                            Rename
                        </button>
                        <button type="button" class="secondary" onClick={() => setDraft(draft ?? saved)} disabled={!!draft || !saved}>
                            Edit query
                        </button>
                        <button type="button" class="secondary" onClick={() => setAdding(true)}>
                            Add to dashboard
                        </button>
                        <button type="button" class="secondary" onClick={refresh} disabled={!!draft || shown.state === 'running'}>
                            Refresh
                        </button>
                        <DeleteButton question={`Delete “${insightName(insight)}”? It leaves its dashboards too.`} to="/insights" disabled={busy} onDelete={() => patch({ deleted: true })} />
                    </PageTitle>
                    {insight.description && <p class="insight-description">{insight.description}</p>}
                    {error && <ErrorText error={error} />}
                </>
            )}
            <p class="muted insight-meta">
                <span class="badge">{kindLabel(insight.query)}</span> <Link href="/insights">All insights</Link> · last modified {when(new Date(insight.last_modified_at))}
                {insight.last_modified_by?.email ? ` by ${insight.last_modified_by.first_name || insight.last_modified_by.email}` : ''}
                {insight.last_refresh ? ` · computed ${when(new Date(insight.last_refresh))}` : ''}
            </p>
            <OnDashboards project={project} ids={insight.dashboards} />
            {draft && (
                <section class="panel insight-editor" aria-label="Query">
                    <div class="panel-head">
                        <h2>Edit the query</h2>
                        <div class="page-actions">
                            <button type="button" class="secondary" onClick={() => { setDraft(null); setError(null); }}>
                                Discard changes
                            </button>
                            <button
                                type="button"
                                class="primary"
                                disabled={busy}
                                onClick={async () => {
                                    if (await patch({ query: storedQuery(draft) })) setDraft(null);
                                }}
                            >
                                Save changes
                            </button>
                        </div>
                    </div>
                    {kind ? <kind.Editor project={project} query={draft} onChange={setDraft} /> : <p class="muted">This kind of query has no editor here; change its JSON.</p>}
                    <QueryJson query={draft} onChange={setDraft} />
                </section>
            )}
            {query ? (
                <RunView project={project} query={query} run={shown} onPersons={setPersons} onRetry={() => setRound((value) => value + 1)} />
            ) : (
                <p class="muted">This insight has no query.</p>
            )}
            {adding && <AddToDashboard project={project} insight={insight} onChanged={setInsight} onClose={() => setAdding(false)} />}
            {persons && <PersonsDialog project={project} request={persons} onClose={() => setPersons(null)} />}
        </main>
    );
}

function Rename({ insight, busy, error, onSave, onCancel }: {
    insight: Insight;
    busy: boolean;
    error: ApiError | null;
    onSave: (body: Record<string, unknown>) => void;
    onCancel: () => void;
}) {
    const [name, setName] = useState(insight.name ?? '');
    const [description, setDescription] = useState(insight.description ?? '');
    return (
        <form
            class="panel insight-rename"
            onSubmit={(event) => {
                event.preventDefault();
                onSave({ name: name.trim(), description: description.trim() });
            }}
        >
            <NameDescriptionFields name={name} description={description} onName={setName} onDescription={setDescription} error={error} maxLength={400} />
            <SubmitCancel submit={busy ? 'Saving…' : 'Save'} disabled={busy} onCancel={onCancel} />
        </form>
    );
}

/** "On dashboards: A, B" with links. */
function OnDashboards({ project, ids }: { project: Project; ids: number[] }) {
    const [names] = useLoad(
        async () => {
            if (ids.length === 0) return [] as DashboardBasic[];
            const found = await Promise.all(
                ids.map((id) => http.get<DashboardBasic>(projectPath(project.id, `dashboards/${id}/`)).catch(() => ({ id, name: `Dashboard ${id}` }) as DashboardBasic)),
            );
            return found;
        },
        [project.id, ids.join(',')],
    );
    if (ids.length === 0) return null;
    return (
        <p class="insight-dashboards">
            On {ids.length === 1 ? 'dashboard' : 'dashboards'}{' '}
            {names.state === 'done'
                ? names.value.map((dashboard, index) => (
                      <span key={dashboard.id}>
                          {index > 0 && ', '}
                          <Link href={`/dashboards/${dashboard.id}`}>{dashboard.name || `Dashboard ${dashboard.id}`}</Link>
                      </span>
                  ))
                : ids.join(', ')}
        </p>
    );
}

const DASHBOARDS_LIMIT = 10;

/** Puts the insight on a dashboard (or takes it off), or on a new one: PATCH its `dashboards`. */
function AddToDashboard({ project, insight, onChanged, onClose }: {
    project: Project;
    insight: Insight;
    onChanged: (insight: Insight) => void;
    onClose: () => void;
}) {
    const [offset, setOffset] = useState(0);
    const [search, setSearch] = useState('');
    const [name, setName] = useState('');
    const { busy, error, run: attempt } = useAction();
    const [list, reload] = useLoad(
        () => http.get<Paged<DashboardBasic>>(withParams(projectPath(project.id, 'dashboards/'), { limit: DASHBOARDS_LIMIT, offset, search })),
        [project.id, offset, search],
    );
    const path = projectPath(project.id, `insights/${insight.id}/`);

    async function place(dashboards: number[]) {
        await attempt(async () => onChanged(await http.patch<Insight>(path, { dashboards })));
    }

    return (
        <Dialog title="Add to dashboard" onClose={onClose}>
            <label class="field">
                <span class="field-label">Find a dashboard</span>
                <input type="search" value={search} onInput={(event) => { setOffset(0); setSearch(event.currentTarget.value); }} />
            </label>
            {error && !fieldError(error, 'name') && <ErrorText error={error} />}
            <Loaded loadable={list}>
                {(page) => (
                    <>
                        {page.results.length === 0 ? (
                            <p class="muted">No dashboards{search ? ' match' : ' yet'}.</p>
                        ) : (
                            <ul class="dashboard-choices">
                                {page.results.map((dashboard) => {
                                    const on = insight.dashboards.includes(dashboard.id);
                                    return (
                                        <li key={dashboard.id} data-dashboard-id={dashboard.id}>
                                            <span>{dashboard.name || `Dashboard ${dashboard.id}`}</span>
                                            {on ? (
                                                <button type="button" class="secondary" disabled={busy} onClick={() => place(insight.dashboards.filter((id) => id !== dashboard.id))}>
                                                    Remove
                                                </button>
                                            ) : (
                                                <button type="button" class="primary" disabled={busy} onClick={() => place([...insight.dashboards, dashboard.id])}>
                                                    Add
                                                </button>
                                            )}
                                        </li>
                                    );
                                })}
                            </ul>
                        )}
                        <Pager offset={offset} limit={DASHBOARDS_LIMIT} shown={page.results.length} hasMore={page.next !== null} onOffset={setOffset} />
                    </>
                )}
            </Loaded>
            <form
                class="toolbar new-dashboard"
                onSubmit={async (event) => {
                    event.preventDefault();
                    await attempt(async () => {
                        const created = await http.post<DashboardBasic>(projectPath(project.id, 'dashboards/'), { name: name.trim() });
                        onChanged(await http.patch<Insight>(path, { dashboards: [...insight.dashboards, created.id] }));
                        setName('');
                        reload();
                    });
                }}
            >
                <Field label="Or a new dashboard" error={fieldError(error, 'name')}>
                    <input name="dashboard-name" value={name} placeholder="Dashboard name" onInput={(event) => setName(event.currentTarget.value)} />
                </Field>
                <button type="submit" class="secondary" disabled={busy || !name.trim()}>
                    Create and add
                </button>
            </form>
        </Dialog>
    );
}
