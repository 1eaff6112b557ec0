// Insights: the saved insights (search, paging, kind, last modified), a new insight of a kind
// (page-new.tsx), and a saved one (page-insight.tsx). `/insights`, `/insights/new?kind=`,
// `/insights/<id>`.

import { useState } from 'preact/hooks';
import { type Paged, http, projectPath, withParams } from '../api';
import { timeFormatter } from '../format';
import type { PageProps } from '../pages';
import { Link } from '../router';
import { Dialog, Loaded, PageTitle, useLoad } from '../ui';
import { ListTable, SearchForm, navigateSearch, offsetParam } from '../ui-list';
import { KINDS } from './kinds';
import { type Insight, insightName, kindLabel } from './page-run';
import { InsightPage } from './page-insight';
import { NewInsight } from './page-new';

const LIMIT = 20;

export default function Page(props: PageProps) {
    const [first] = props.rest;
    if (first === 'new') return <NewInsight {...props} />;
    if (first) return <InsightPage {...props} id={first} />;
    return <InsightList {...props} />;
}

/** The kinds to start from, as buttons. */
export function KindPicker({ onClose }: { onClose: () => void }) {
    return (
        <Dialog title="New insight" onClose={onClose}>
            <p class="muted">What kind of insight?</p>
            <ul class="new-insight-kinds">
                {KINDS.map((kind) => (
                    <li key={kind.kind}>
                        <Link href={`/insights/new?kind=${encodeURIComponent(kind.kind)}`} class="new-insight-kind">
                            {kind.label}
                        </Link>
                    </li>
                ))}
            </ul>
        </Dialog>
    );
}

function InsightList({ project, location }: PageProps) {
    const search = location.search.get('search') ?? '';
    const offset = offsetParam(location.search);
    const [picking, setPicking] = useState(false);
    const [list] = useLoad(
        () =>
            http.get<Paged<Insight>>(
                withParams(projectPath(project.id, 'insights/'), { basic: true, saved: true, search, limit: LIMIT, offset, order: '-last_modified_at' }),
            ),
        [project.id, search, offset],
    );
    const when = timeFormatter(project.timezone);
    return (
        <main class="page insights-page">
            <PageTitle title="Insights">
                <button type="button" class="primary" onClick={() => setPicking(true)}>
                    New insight
                </button>
            </PageTitle>
            {picking && <KindPicker onClose={() => setPicking(false)} />}
            <SearchForm value={search} placeholder="Name, description or tag" onSearch={(text) => navigateSearch('/insights', text)} />
            <Loaded loadable={list}>
                {(page) => (
                    <section class="panel">
                        <ListTable
                            class="insights-table"
                            shown={page.results.length}
                            empty={search ? 'No insight matches.' : 'No saved insights yet.'}
                            offset={offset}
                            limit={LIMIT}
                            hasMore={page.next !== null}
                            head={
                                <>
                                    <th>Name</th>
                                    <th>Kind</th>
                                    <th>Last modified</th>
                                </>
                            }
                        >
                            {page.results.map((insight) => (
                                <tr key={insight.id} data-id={insight.id}>
                                    <td>
                                        <Link href={`/insights/${insight.short_id || insight.id}`}>{insightName(insight)}</Link>
                                        {insight.description && <div class="muted insight-description">{insight.description}</div>}
                                    </td>
                                    <td>
                                        <span class="badge">{kindLabel(insight.query)}</span>
                                    </td>
                                    <td class="nowrap">
                                        {when(new Date(insight.last_modified_at))}
                                        {insight.last_modified_by?.email && <div class="muted">{insight.last_modified_by.first_name || insight.last_modified_by.email}</div>}
                                    </td>
                                </tr>
                            ))}
                        </ListTable>
                    </section>
                )}
            </Loaded>
        </main>
    );
}
