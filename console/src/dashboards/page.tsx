// Dashboards: the project's dashboards (search, paging) and a new one (name, description);
// `/dashboards/<id>` is one dashboard's tiles (dashboard.tsx).

import { useState } from 'preact/hooks';
import { type ApiError, type Paged, asApiError, http, projectPath, withParams } from '../api';
import { timeFormatter } from '../format';
import type { DashboardBasic } from '../insights/page-insight';
import type { PageProps } from '../pages';
import { Link, navigate } from '../router';
import { Dialog, Loaded, PageTitle, useLoad } from '../ui';
import { ListTable, SearchForm, navigateSearch, offsetParam } from '../ui-list';
import { NameDescriptionFields } from '../ui-form';
import { DashboardPage } from './dashboard';

const LIMIT = 20;

export default function Page(props: PageProps) {
    const [first] = props.rest;
    if (first) return <DashboardPage {...props} id={first} />;
    return <DashboardList {...props} />;
}

function DashboardList({ project, location }: PageProps) {
    const search = location.search.get('search') ?? '';
    const offset = offsetParam(location.search);
    const [creating, setCreating] = useState(false);
    const [list] = useLoad(
        () => http.get<Paged<DashboardBasic>>(withParams(projectPath(project.id, 'dashboards/'), { search, limit: LIMIT, offset })),
        [project.id, search, offset],
    );
    const when = timeFormatter(project.timezone);
    return (
        <main class="page dashboards-page">
            <PageTitle title="Dashboards">
                <button type="button" class="primary" onClick={() => setCreating(true)}>
                    New dashboard
                </button>
            </PageTitle>
            {creating && <NewDashboard projectId={project.id} onClose={() => setCreating(false)} />}
            <SearchForm value={search} placeholder="Name or description" onSearch={(text) => navigateSearch('/dashboards', text)} />
            <Loaded loadable={list}>
                {(page) => (
                    <section class="panel">
                        <ListTable
                            class="dashboards-table"
                            shown={page.results.length}
                            empty={search ? 'No dashboard matches.' : 'No dashboards yet.'}
                            offset={offset}
                            limit={LIMIT}
                            hasMore={page.next !== null}
                            head={
                                <>
                                    <th>Name</th>
                                    <th>Created</th>
                                </>
                            }
                        >
                            {page.results.map((dashboard) => (
                                <tr key={dashboard.id} data-id={dashboard.id}>
                                    <td>
                                        <Link href={`/dashboards/${dashboard.id}`}>{dashboard.name || `Dashboard ${dashboard.id}`}</Link>
                                        {dashboard.pinned && <span class="badge pinned">Pinned</span>}
                                        {dashboard.description && <div class="muted">{dashboard.description}</div>}
                                    </td>
                                    <td class="nowrap">{when(new Date(dashboard.created_at))}</td>
                                </tr>
                            ))}
                        </ListTable>
                    </section>
                )}
            </Loaded>
        </main>
    );
}

function NewDashboard({ projectId, onClose }: { projectId: number; onClose: () => void }) {
    const [name, setName] = useState('');
    const [description, setDescription] = useState('');
    const [error, setError] = useState<ApiError | null>(null);
    const [busy, setBusy] = useState(false);
    return (
        <Dialog title="New dashboard" onClose={onClose}>
            <form
                class="dashboard-form"
                onSubmit={async (event) => {
                    event.preventDefault();
                    setBusy(true);
                    setError(null);
                    try {
                        const created = await http.post<DashboardBasic>(projectPath(projectId, 'dashboards/'), {
                            name: name.trim(),
                            description: description.trim(),
                        });
                        navigate(`/dashboards/${created.id}`);
                    } catch (thrown) {
                        setError(asApiError(thrown));
                        setBusy(false);
                    }
                }}
            >
                <NameDescriptionFields name={name} description={description} onName={setName} onDescription={setDescription} error={error} />
                <div class="toolbar">
                    <button type="submit" class="primary" disabled={busy}>
                        {busy ? 'Creating…' : 'Create'}
                    </button>
                </div>
            </form>
        </Dialog>
    );
}
