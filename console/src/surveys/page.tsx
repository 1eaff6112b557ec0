// Surveys: the list (status, search, pages), a survey's page (launch, stop, resume, archive,
// delete; its stats and responses) and the editor with a live preview of the popover.

import { type Paged, http, withParams } from '../api';
import type { PageProps } from '../pages';
import { Link, setSearchParam } from '../router';
import { Loaded, PageTitle, useLoad } from '../ui';
import { ListTable, offsetParam } from '../ui-list';
import { SurveyDetail } from './detail';
import { SurveyEditor } from './editor';
import { type Survey, surveysPath } from './model';
import { StatusBadge } from './badge';

const LIMIT = 20;


function List({ project, location }: PageProps) {
    const search = location.search.get('search') ?? '';
    const archived = location.search.get('archived') === 'true';
    const offset = offsetParam(location.search);
    const [page] = useLoad(
        () => http.get<Paged<Survey>>(withParams(surveysPath(project.id), { limit: LIMIT, offset, search, archived: archived ? 'true' : null })),
        [project.id, search, archived, offset],
    );
    return (
        <main class="page sv-page">
            <PageTitle title="Surveys">
                <Link href="/surveys/new" class="sv-button">
                    New survey
                </Link>
            </PageTitle>
            <div class="toolbar">
                <label class="field">
                    <span class="field-label">Search</span>
                    <input
                        type="search"
                        value={search}
                        onChange={(e) => {
                            setSearchParam('offset', null);
                            setSearchParam('search', e.currentTarget.value);
                        }}
                    />
                </label>
                <label class="sv-check">
                    <input
                        type="checkbox"
                        checked={archived}
                        onChange={(e) => {
                            setSearchParam('offset', null);
                            setSearchParam('archived', e.currentTarget.checked ? 'true' : null);
                        }}
                    />{' '}
                    Archived only
                </label>
            </div>
            <Loaded loadable={page}>
                {(value) => (
                    <section class="panel">
                        <ListTable
                            class="sv-list"
                            shown={value.results.length}
                            empty={search ? 'No survey matches.' : 'No surveys yet.'}
                            offset={offset}
                            limit={LIMIT}
                            hasMore={!!value.next}
                            head={
                                <>
                                    <th>Name</th>
                                    <th>Type</th>
                                    <th>Status</th>
                                    <th class="num">Questions</th>
                                    <th>Created</th>
                                </>
                            }
                        >
                            {value.results.map((survey) => (
                                <tr key={survey.id} data-id={survey.id}>
                                    <td>
                                        <Link href={`/surveys/${survey.id}`}>{survey.name}</Link>
                                    </td>
                                    <td>{survey.type}</td>
                                    <td>
                                        <StatusBadge survey={survey} />
                                    </td>
                                    <td class="num">{survey.questions.length}</td>
                                    <td>{new Date(survey.created_at).toLocaleDateString()}</td>
                                </tr>
                            ))}
                        </ListTable>
                    </section>
                )}
            </Loaded>
        </main>
    );
}

export default function Page(props: PageProps) {
    const [first, second] = props.rest;
    if (first === 'new') return <SurveyEditor projectId={props.project.id} id={null} />;
    if (first && second === 'edit') return <SurveyEditor projectId={props.project.id} id={first} />;
    if (first) return <SurveyDetail {...props} id={first} />;
    return <List {...props} />;
}
