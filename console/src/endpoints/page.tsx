// Endpoints: named HogQL queries served at their own path. The list (with the last execution
// times), creating one (the API validates the name and the query), and an endpoint's page: its
// versions, variables, a run with variable values, materialization, the OpenAPI document.

import { useState } from 'preact/hooks';
import { type ApiError, asApiError, http, withParams } from '../api';
import type { PageProps } from '../pages';
import { Link, navigate, setSearchParam } from '../router';
import { ErrorText, Field, Loaded, PageTitle, Pager, fieldError, useLoad } from '../ui';
import { ScrollTable, offsetParam, setOffsetParam } from '../ui-list';
import { EndpointDetail } from './detail';
import { type Endpoint, endpointsPath, variablesNode } from './model';
import { SyncFrequencyField, VariableRows } from './variables';

const LIMIT = 20;

interface ExecutionTimes {
    query_status: { results: [string, string | null][] | null };
}

function List({ project, location }: PageProps) {
    const offset = offsetParam(location.search);
    const active = location.search.get('active') ?? '';
    const [list] = useLoad(async () => {
        const answer = await http.get<{ results: Endpoint[] }>(withParams(endpointsPath(project.id), { is_active: active || null }));
        const names = answer.results.map((e) => e.name);
        const times = names.length ? await http.post<ExecutionTimes>(endpointsPath(project.id, 'last_execution_times/'), { names }) : null;
        const last = new Map<string, string | null>((times?.query_status.results ?? []).map(([name, at]) => [name, at]));
        return { endpoints: answer.results, last };
    }, [project.id, active]);
    return (
        <main class="page ep-page">
            <PageTitle title="Endpoints">
                <Link href="/endpoints/new" class="ep-button">
                    New endpoint
                </Link>
            </PageTitle>
            <div class="toolbar">
                <label class="field">
                    <span class="field-label">Show</span>
                    <select value={active} onChange={(e) => { setSearchParam('offset', null); setSearchParam('active', e.currentTarget.value || null); }}>
                        <option value="">All endpoints</option>
                        <option value="true">Active</option>
                        <option value="false">Inactive</option>
                    </select>
                </label>
            </div>
            <Loaded loadable={list}>
                {({ endpoints, last }) => {
                    // The API answers the whole list (PostHog's shape); the page shows it LIMIT at a time.
                    const shown = endpoints.slice(offset, offset + LIMIT);
                    return (
                        <section class="panel">
                            {endpoints.length === 0 ? (
                                <p class="muted">No endpoints yet.</p>
                            ) : (
                                <ScrollTable
                                    class="ep-list"
                                    head={
                                        <>
                                            <th>Name</th>
                                            <th>Description</th>
                                            <th class="num">Version</th>
                                            <th>Materialized</th>
                                            <th>Active</th>
                                            <th>Last run</th>
                                        </>
                                    }
                                >
                                    {shown.map((e) => {
                                        const at = last.get(e.name) ?? e.last_executed_at;
                                        return (
                                            <tr key={e.id} data-name={e.name}>
                                                <td>
                                                    <Link href={`/endpoints/${encodeURIComponent(e.name)}`}>{e.name}</Link>
                                                </td>
                                                <td>{e.description}</td>
                                                <td class="num">{e.current_version}</td>
                                                <td>{e.is_materialized ? (e.materialization.status ?? 'yes') : 'no'}</td>
                                                <td>{e.is_active ? 'yes' : 'no'}</td>
                                                <td data-last-run={at ?? ''}>{at ? new Date(at).toLocaleString() : 'never'}</td>
                                            </tr>
                                        );
                                    })}
                                </ScrollTable>
                            )}
                            <Pager offset={offset} limit={LIMIT} shown={shown.length} hasMore={offset + LIMIT < endpoints.length} onOffset={setOffsetParam} />
                        </section>
                    );
                }}
            </Loaded>
        </main>
    );
}


function NewEndpoint({ project }: PageProps) {
    const [name, setName] = useState('');
    const [description, setDescription] = useState('');
    const [query, setQuery] = useState('SELECT event, count() AS events\nFROM events\nWHERE event = {variables.event_name}\nGROUP BY event');
    const [rows, setRows] = useState([{ code_name: 'event_name', value: '$pageview' }]);
    const [materialize, setMaterialize] = useState(false);
    const [sync, setSync] = useState('24hour');
    const [error, setError] = useState<ApiError | null>(null);
    const [saving, setSaving] = useState(false);

    async function save(event: Event) {
        event.preventDefault();
        setSaving(true);
        setError(null);
        try {
            const body: Record<string, unknown> = {
                name,
                description,
                query: { kind: 'HogQLQuery', query, variables: variablesNode(rows) },
                is_materialized: materialize,
            };
            if (materialize) body.sync_frequency = sync;
            const saved = await http.post<Endpoint>(endpointsPath(project.id), body);
            navigate(`/endpoints/${encodeURIComponent(saved.name)}`);
        } catch (thrown) {
            setError(asApiError(thrown));
            setSaving(false);
        }
    }

    const other = error && !['name', 'query', 'description', 'is_materialized', 'sync_frequency'].some((a) => fieldError(error, a));
    return (
        <main class="page ep-page">
            <PageTitle title="New endpoint" />
            <form class="panel ep-form" onSubmit={save} noValidate>
                <Field label="Name" error={fieldError(error, 'name')} hint="Letters, digits, - and _; starts with a letter. The endpoint answers at …/endpoints/<name>/run/.">
                    <input value={name} onInput={(e) => setName(e.currentTarget.value)} />
                </Field>
                <Field label="Description" error={fieldError(error, 'description')}>
                    <input value={description} onInput={(e) => setDescription(e.currentTarget.value)} />
                </Field>
                <Field label="HogQL query" error={fieldError(error, 'query')}>
                    <textarea class="ep-sql" rows={7} spellcheck={false} value={query} onInput={(e) => setQuery(e.currentTarget.value)} />
                </Field>
                <VariableRows rows={rows} onChange={setRows} />
                <div class="ep-row">
                    <label class="ep-check">
                        <input type="checkbox" checked={materialize} onChange={(e) => setMaterialize(e.currentTarget.checked)} /> Materialize the result
                    </label>
                    {materialize && (
                        <SyncFrequencyField value={sync} onChange={setSync} error={error} />
                    )}
                </div>
                {fieldError(error, 'is_materialized') && <p class="form-error">{fieldError(error, 'is_materialized')}</p>}
                {other && error && <ErrorText error={error} />}
                <div class="ep-row">
                    <button type="submit" class="primary" disabled={saving}>
                        Create endpoint
                    </button>
                    <button type="button" class="secondary" onClick={() => navigate('/endpoints')}>
                        Cancel
                    </button>
                </div>
            </form>
        </main>
    );
}

export default function Page(props: PageProps) {
    const [first] = props.rest;
    if (first === 'new') return <NewEndpoint {...props} />;
    if (first) return <EndpointDetail {...props} name={first} />;
    return <List {...props} />;
}
