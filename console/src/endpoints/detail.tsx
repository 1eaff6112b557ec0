// One endpoint: its versions (`?version=N` shows one), the version's query and variables, a run
// with variable values (the result table, paged), materialization, the OpenAPI document, the
// last run, a new version from a changed query, and deleting it.

import { useState } from 'preact/hooks';
import { type ApiError, asApiError, http } from '../api';
import type { PageProps } from '../pages';
import { Link, navigate, setSearchParam } from '../router';
import { ErrorText, Field, Loaded, PageTitle, Pager, fieldError, useLoad } from '../ui';
import { ScrollTable } from '../ui-list';
import { ConfirmDialog, useAction } from '../ui-form';
import { type Endpoint, type Materialization, type RunAnswer, type Version, cellText, endpointPath, variablesNode, variablesOf } from './model';
import { SyncFrequencyField, VariableRows } from './variables';

const RUN_LIMIT = 50;

function when(at: string | null | undefined): string {
    return at ? new Date(at).toLocaleString() : 'never';
}

function RunPanel({ projectId, endpoint, version, onRan }: { projectId: number; endpoint: Endpoint; version: Version; onRan: () => void }) {
    const variables = variablesOf(version.query);
    const [values, setValues] = useState<Record<string, string>>({});
    const [offset, setOffset] = useState(0);
    const [answer, setAnswer] = useState<RunAnswer | null>(null);
    const [error, setError] = useState<ApiError | null>(null);
    const [running, setRunning] = useState(false);

    async function run(at: number) {
        setRunning(true);
        setError(null);
        try {
            const given: Record<string, string> = {};
            for (const [, v] of variables) {
                const value = values[v.code_name];
                if (value !== undefined && value !== '') given[v.code_name] = value;
            }
            const body: Record<string, unknown> = { version: version.version, limit: RUN_LIMIT, offset: at };
            if (Object.keys(given).length) body.variables = given;
            setAnswer(await http.post<RunAnswer>(endpointPath(projectId, endpoint.name, 'run/'), body));
            setOffset(at);
            onRan();
        } catch (thrown) {
            setError(asApiError(thrown));
            setAnswer(null);
        } finally {
            setRunning(false);
        }
    }

    return (
        <section class="panel" aria-label="Run">
            <h2>Run version {version.version}</h2>
            <form
                class="ep-run-form"
                onSubmit={(e) => {
                    e.preventDefault();
                    void run(0);
                }}
            >
                {variables.map(([id, v]) => (
                    <Field key={id} label={v.code_name} hint={`Default: ${cellText(v.value)}`} error={fieldError(error, 'variables')}>
                        <input name={v.code_name} value={values[v.code_name] ?? ''} placeholder={cellText(v.value)} onInput={(e) => setValues({ ...values, [v.code_name]: e.currentTarget.value })} />
                    </Field>
                ))}
                <button type="submit" class="primary" disabled={running}>
                    {running ? 'Running…' : 'Run'}
                </button>
            </form>
            {error && <ErrorText error={error} />}
            {answer && (
                <div class="ep-result">
                    <p class="muted">
                        {answer.endpoint_materialized ? `From the materialized result of ${when(answer.endpoint_materialized_at)}` : answer.is_cached ? 'From the cache' : 'Run now'}
                        {answer.last_refresh ? ` · computed ${when(answer.last_refresh)}` : ''}
                    </p>
                    {answer.results.length === 0 ? (
                        <p class="muted">No rows.</p>
                    ) : (
                        <ScrollTable
                            class="ep-result-table"
                            head={
                                <>
                                    {answer.columns.map((c, i) => (
                                        <th key={i}>{c}</th>
                                    ))}
                                </>
                            }
                        >
                            {answer.results.map((row, r) => (
                                <tr key={r}>
                                    {row.map((cell, c) => (
                                        <td key={c} class={typeof cell === 'number' ? 'num' : undefined}>
                                            {cellText(cell)}
                                        </td>
                                    ))}
                                </tr>
                            ))}
                        </ScrollTable>
                    )}
                    <Pager offset={offset} limit={RUN_LIMIT} shown={answer.results.length} hasMore={!!answer.hasMore} onOffset={(next) => void run(next)} />
                </div>
            )}
        </section>
    );
}

function MaterializationPanel({ projectId, endpoint, onChanged }: { projectId: number; endpoint: Endpoint; onChanged: () => void }) {
    const [status, reload] = useLoad(() => http.get<Materialization>(endpointPath(projectId, endpoint.name, 'materialization_status/')), [projectId, endpoint.name, endpoint.updated_at]);
    const [sync, setSync] = useState(endpoint.materialization.sync_frequency || '24hour');
    const [error, setError] = useState<ApiError | null>(null);
    const [busy, setBusy] = useState(false);

    async function change(body: Record<string, unknown>) {
        setBusy(true);
        setError(null);
        try {
            await http.patch(endpointPath(projectId, endpoint.name), body);
            onChanged();
            reload();
        } catch (thrown) {
            setError(asApiError(thrown));
        } finally {
            setBusy(false);
        }
    }

    return (
        <section class="panel" aria-label="Materialization">
            <h2>Materialization</h2>
            <Loaded loadable={status}>
                {(m) => (
                    <dl class="ep-facts" data-materialized={String(endpoint.is_materialized)}>
                        <dt>Materialized</dt>
                        <dd data-field="is_materialized">{endpoint.is_materialized ? 'yes' : 'no'}</dd>
                        {endpoint.is_materialized ? (
                            <>
                                <dt>Status</dt>
                                <dd data-field="status">{m.status}</dd>
                                <dt>Sync every</dt>
                                <dd data-field="sync_frequency">{m.sync_frequency}</dd>
                                <dt>Last materialized</dt>
                                <dd data-field="last_materialized_at">{when(m.last_materialized_at)}</dd>
                                {m.error && (
                                    <>
                                        <dt>Error</dt>
                                        <dd class="form-error">{m.error}</dd>
                                    </>
                                )}
                            </>
                        ) : (
                            <>
                                <dt>Can materialize</dt>
                                <dd data-field="can_materialize">{m.can_materialize ? 'yes' : `no: ${m.reason ?? ''}`}</dd>
                            </>
                        )}
                    </dl>
                )}
            </Loaded>
            <div class="ep-row">
                <SyncFrequencyField value={sync} onChange={setSync} error={error} />
                {endpoint.is_materialized ? (
                    <>
                        <button type="button" class="secondary" disabled={busy} onClick={() => change({ sync_frequency: sync })}>
                            Save frequency
                        </button>
                        <button type="button" class="secondary" disabled={busy} onClick={() => change({ is_materialized: false })}>
                            Stop materializing
                        </button>
                    </>
                ) : (
                    <button type="button" class="secondary" disabled={busy} onClick={() => change({ is_materialized: true, sync_frequency: sync })}>
                        Materialize
                    </button>
                )}
            </div>
            {error && !fieldError(error, 'sync_frequency') && <ErrorText error={error} />}
        </section>
    );
}

function QueryEditor({ projectId, endpoint, version, onSaved }: { projectId: number; endpoint: Endpoint; version: Version; onSaved: () => void }) {
    const [query, setQuery] = useState(String(version.query.query ?? ''));
    const [rows, setRows] = useState(variablesOf(version.query).map(([, v]) => ({ code_name: v.code_name, value: cellText(v.value) })));
    const { busy: saving, error, run: attempt } = useAction();

    async function save(event: Event) {
        event.preventDefault();
        await attempt(async () => {
            await http.patch(endpointPath(projectId, endpoint.name), { query: { ...version.query, kind: 'HogQLQuery', query, variables: variablesNode(rows, version.query.variables) } });
            setSearchParam('version', null);
            onSaved();
        });
    }

    return (
        <form class="ep-form" onSubmit={save} noValidate>
            <Field label="HogQL query" error={fieldError(error, 'query')}>
                <textarea class="ep-sql" rows={7} spellcheck={false} value={query} onInput={(e) => setQuery(e.currentTarget.value)} />
            </Field>
            <VariableRows rows={rows} onChange={setRows} />
            {error && !fieldError(error, 'query') && <ErrorText error={error} />}
            <div class="ep-row">
                <button type="submit" class="primary" disabled={saving}>
                    Save as a new version
                </button>
            </div>
        </form>
    );
}

function Versions({ versions, shown, current }: { versions: Version[]; shown: number; current: number }) {
    return (
        <section class="panel" aria-label="Versions">
            <h2>Versions</h2>
            <ScrollTable
                class="ep-versions"
                head={
                    <>
                        <th class="num">Version</th>
                        <th>Created</th>
                        <th>By</th>
                        <th>Materialized</th>
                        <th>Query</th>
                    </>
                }
            >
                {versions.map((v) => (
                    <tr key={v.id} data-version={v.version} class={v.version === shown ? 'ep-shown' : undefined}>
                        <td class="num">
                            <button type="button" class="link" aria-current={v.version === shown ? 'true' : undefined} onClick={() => setSearchParam('version', v.version === current ? null : String(v.version))}>
                                v{v.version}
                            </button>
                            {v.version === current && <span class="badge">current</span>}
                        </td>
                        <td>{when(v.created_at)}</td>
                        <td>{v.created_by?.email ?? ''}</td>
                        <td>{v.is_materialized ? `every ${v.sync_frequency}` : 'no'}</td>
                        <td>
                            <code class="ep-query-snippet">{String(v.query.query ?? v.query.kind)}</code>
                        </td>
                    </tr>
                ))}
            </ScrollTable>
        </section>
    );
}

export function EndpointDetail({ project, location, name }: PageProps & { name: string }) {
    const [round, setRound] = useState(0);
    const [data, reload] = useLoad(async () => {
        const [endpoint, versions] = await Promise.all([
            http.get<Endpoint>(endpointPath(project.id, name)),
            http.get<Version[]>(endpointPath(project.id, name, 'versions/')),
        ]);
        return { endpoint, versions };
    }, [project.id, name, round]);
    const asked = location.search.get('version');
    const [picked] = useLoad(() => (asked ? http.get<Version>(endpointPath(project.id, name, `versions/${asked}/`)) : Promise.resolve(null)), [project.id, name, asked]);
    const [editing, setEditing] = useState(false);
    const [deleting, setDeleting] = useState(false);
    const [error, setError] = useState<ApiError | null>(null);
    const refresh = () => {
        setRound((r) => r + 1);
        reload();
    };

    return (
        <Loaded loadable={data}>
            {({ endpoint, versions }) => {
                const current = versions.find((v) => v.version === endpoint.current_version) ?? versions[0];
                const version = picked.state === 'done' && picked.value ? picked.value : current;
                if (!version) return <p class="muted">No versions.</p>;
                const vars = variablesOf(version.query);
                return (
                    <main class="page ep-page">
                        <PageTitle title={endpoint.name}>
                            <span class="badge">{endpoint.is_active ? 'active' : 'inactive'}</span>
                            <a class="ep-button secondary" href={endpointPath(project.id, endpoint.name, 'openapi.json')} target="_blank" rel="noopener">
                                OpenAPI document
                            </a>
                            <button type="button" class="secondary" onClick={() => setEditing(!editing)}>
                                {editing ? 'Close editor' : 'Change query'}
                            </button>
                            <button type="button" class="secondary" onClick={async () => { setError(null); try { await http.patch(endpointPath(project.id, endpoint.name), { is_active: !endpoint.is_active }); refresh(); } catch (t) { setError(asApiError(t)); } }}>
                                {endpoint.is_active ? 'Deactivate' : 'Activate'}
                            </button>
                            <button type="button" class="secondary ep-danger" onClick={() => setDeleting(true)}>
                                Delete
                            </button>
                        </PageTitle>
                        <p class="muted">
                            <Link href="/endpoints">All endpoints</Link> · {endpoint.description || 'No description'} · last run {when(endpoint.last_executed_at)}
                        </p>
                        {error && <ErrorText error={error} />}
                        {picked.state === 'failed' && <ErrorText error={picked.error} />}
                        <section class="panel" aria-label="Endpoint">
                            <div class="panel-head">
                                <h2>
                                    Version {version.version}
                                    {version.version === endpoint.current_version ? ' (current)' : ''}
                                </h2>
                                <span class="muted">{versions.length === 1 ? '1 version' : `${versions.length} versions`}</span>
                            </div>
                            <dl class="ep-facts">
                                <dt>Run path</dt>
                                <dd>
                                    <code class="ep-path">POST {endpoint.endpoint_path}/</code>
                                </dd>
                                <dt>Cache age</dt>
                                <dd>{version.cache_age_seconds ? `${version.cache_age_seconds} s` : 'default'}</dd>
                                <dt>Columns</dt>
                                <dd>{version.columns.map((c) => `${c.name} (${c.type})`).join(', ')}</dd>
                            </dl>
                            {editing ? (
                                <QueryEditor
                                    key={version.id}
                                    projectId={project.id}
                                    endpoint={endpoint}
                                    version={version}
                                    onSaved={() => {
                                        setEditing(false);
                                        refresh();
                                    }}
                                />
                            ) : (
                                <pre class="ep-sql-view">{String(version.query.query ?? JSON.stringify(version.query, null, 2))}</pre>
                            )}
                            <h3>Variables</h3>
                            {vars.length === 0 ? (
                                <p class="muted">None.</p>
                            ) : (
                                <ScrollTable
                                    class="ep-vars"
                                    head={
                                        <>
                                            <th>Name</th>
                                            <th>Default</th>
                                        </>
                                    }
                                >
                                    {vars.map(([id, v]) => (
                                        <tr key={id}>
                                            <td>
                                                <code>{v.code_name}</code>
                                            </td>
                                            <td>{cellText(v.value)}</td>
                                        </tr>
                                    ))}
                                </ScrollTable>
                            )}
                        </section>
                        <RunPanel key={version.id} projectId={project.id} endpoint={endpoint} version={version} onRan={refresh} />
                        <MaterializationPanel projectId={project.id} endpoint={endpoint} onChanged={refresh} />
                        <Versions versions={versions} shown={version.version} current={endpoint.current_version} />
                        {deleting && (
                            <ConfirmDialog
                                title="Delete endpoint"
                                confirm="Delete"
                                confirmClass="primary ep-danger-fill"
                                actionsClass="ep-row"
                                onConfirm={async () => {
                                    try {
                                        await http.delete(endpointPath(project.id, endpoint.name));
                                        navigate('/endpoints');
                                    } catch (t) {
                                        setError(asApiError(t));
                                        setDeleting(false);
                                    }
                                }}
                                onCancel={() => setDeleting(false)}
                            >
                                Delete <strong>{endpoint.name}</strong>? Its run path stops answering and its materialized results go.
                            </ConfirmDialog>
                        )}
                    </main>
                );
            }}
        </Loaded>
    );
}
