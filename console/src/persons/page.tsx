// Persons: the project's persons, newest first, searched as PostHog's persons list searches
// (a distinct id, or text in a property such as the e-mail or name), in the API's cursor pages;
// and one person (`/persons/<uuid>`): their properties (searchable, each deletable), distinct ids
// and events, newest first, through an EventsQuery on the person.

import { useEffect, useState } from 'preact/hooks';
import { type ApiError, asApiError, http, projectPath, withParams } from '../api';
import { timeFormatter } from '../format';
import { runQuery } from '../query';
import type { PageProps } from '../pages';
import { Link, navigate, setSearchParam } from '../router';
import { ErrorText, Loaded, PageTitle, Pager, useLoad } from '../ui';
import { ListTable, SearchForm } from '../ui-list';
import { ConfirmDialog } from '../ui-form';
import { EVENTS_PAGE, EventsTable, type EventsAnswer, PropertiesTable, eventRow, eventsQuery } from './shared';

/** A person as the persons routes answer them. */
export interface Person {
    id: string;
    uuid: string;
    name: string;
    distinct_ids: string[];
    properties: Record<string, unknown>;
    created_at: string;
}

interface PersonsPage {
    results: Person[];
    next: string | null;
}

const PAGE_SIZE = 50;

export default function Page({ project, location, rest }: PageProps) {
    if (rest.length > 0) return <PersonPage projectId={project.id} timeZone={project.timezone} id={rest[0] ?? ''} />;
    return <PersonsList projectId={project.id} timeZone={project.timezone} search={location.search.get('search') ?? ''} />;
}

/** The path of a page of the list: the first, or the one a `next` link names (its cursor). */
function listPath(projectId: number, search: string, cursor: string | null): string {
    return withParams(projectPath(projectId, 'persons/'), { search, limit: PAGE_SIZE, cursor });
}

function cursorOf(next: string | null): string | null {
    if (!next) return null;
    try {
        return new URL(next, window.location.origin).searchParams.get('cursor');
    } catch {
        return null;
    }
}

function PersonsList({ projectId, timeZone, search }: { projectId: number; timeZone: string; search: string }) {
    // The cursors of the pages before this one: the API pages by cursor, Previous goes back.
    const [cursors, setCursors] = useState<(string | null)[]>([null]);
    useEffect(() => {
        setCursors([null]);
    }, [search]);
    const cursor = cursors[cursors.length - 1] ?? null;
    const [page] = useLoad(() => http.get<PersonsPage>(listPath(projectId, search, cursor)), [projectId, search, cursor]);
    const time = timeFormatter(timeZone);
    const offset = (cursors.length - 1) * PAGE_SIZE;

    return (
        <main class="page persons-page">
            <PageTitle title="Persons" />
            <SearchForm
                class="persons-search"
                fieldClass="grow"
                value={search}
                placeholder="Distinct id, e-mail or name"
                onSearch={(text) => setSearchParam('search', text)}
            >
                {search && (
                    <button type="button" class="secondary" onClick={() => setSearchParam('search', null)}>
                        Clear
                    </button>
                )}
            </SearchForm>
            <section class="panel">
                <Loaded loadable={page}>
                    {({ results, next }) => (
                        <>
                            <ListTable
                                class="persons-table"
                                emptyClass="persons-empty"
                                shown={results.length}
                                empty={search ? `No person matches “${search}”.` : 'No persons yet: they are made by the events you capture.'}
                                offset={offset}
                                limit={PAGE_SIZE}
                                hasMore={cursorOf(next) !== null}
                                onOffset={(to) => {
                                    if (to > offset) setCursors((previous) => [...previous, cursorOf(next)]);
                                    else setCursors((previous) => (previous.length > 1 ? previous.slice(0, -1) : previous));
                                }}
                                head={
                                    <>
                                        <th>Person</th>
                                        <th>Distinct id</th>
                                        <th>E-mail</th>
                                        <th>Created</th>
                                    </>
                                }
                            >
                                {results.map((person) => (
                                    <tr key={person.id} data-id={person.id}>
                                        <td class="person-name">
                                            <Link href={`/persons/${encodeURIComponent(person.id)}`}>{person.name || person.distinct_ids[0] || person.id}</Link>
                                        </td>
                                        <td class="person-distinct-id">
                                            <code>{person.distinct_ids[0] ?? ''}</code>
                                            {person.distinct_ids.length > 1 && <span class="muted"> +{person.distinct_ids.length - 1}</span>}
                                        </td>
                                        <td class="person-email">{typeof person.properties.email === 'string' ? person.properties.email : <span class="muted">—</span>}</td>
                                        <td class="person-created">
                                            <time dateTime={person.created_at}>{time(new Date(person.created_at))}</time>
                                        </td>
                                    </tr>
                                ))}
                            </ListTable>
                        </>
                    )}
                </Loaded>
            </section>
        </main>
    );
}

function PersonPage({ projectId, timeZone, id }: { projectId: number; timeZone: string; id: string }) {
    const path = projectPath(projectId, `persons/${encodeURIComponent(id)}/`);
    const [person, reload] = useLoad(() => http.get<Person>(path), [path]);
    const [deleting, setDeleting] = useState<string | null>(null);
    const [busyKey, setBusyKey] = useState<string | null>(null);
    const [error, setError] = useState<ApiError | null>(null);
    const time = timeFormatter(timeZone);

    async function deleteProperty(key: string) {
        setDeleting(null);
        setBusyKey(key);
        setError(null);
        try {
            await http.post(projectPath(projectId, `persons/${encodeURIComponent(id)}/delete_property/`), { $unset: key });
            reload();
        } catch (thrown) {
            setError(asApiError(thrown));
        } finally {
            setBusyKey(null);
        }
    }

    return (
        <main class="page person-page">
            <p class="person-back">
                <Link href="/persons">← Persons</Link>
            </p>
            <Loaded loadable={person}>
                {(value) => (
                    <>
                        <PageTitle title={value.name || value.distinct_ids[0] || value.id} />
                        <section class="panel person-summary">
                            <dl class="person-facts">
                                <div>
                                    <dt>Person id</dt>
                                    <dd>
                                        <code id="person-uuid">{value.uuid}</code>
                                    </dd>
                                </div>
                                <div>
                                    <dt>Created</dt>
                                    <dd>
                                        <time dateTime={value.created_at}>{time(new Date(value.created_at))}</time>
                                    </dd>
                                </div>
                                <div>
                                    <dt>Distinct ids</dt>
                                    <dd>
                                        <ul class="distinct-ids" aria-label="Distinct ids">
                                            {value.distinct_ids.map((distinctId) => (
                                                <li key={distinctId}>
                                                    <code>{distinctId}</code>
                                                </li>
                                            ))}
                                        </ul>
                                    </dd>
                                </div>
                            </dl>
                        </section>
                        <section class="panel">
                            <div class="panel-head">
                                <h2>Properties</h2>
                                <span class="muted">{Object.keys(value.properties).length}</span>
                            </div>
                            {error && <ErrorText error={error} />}
                            <PropertiesTable properties={value.properties} label="Person properties" onDelete={setDeleting} busyKey={busyKey} />
                        </section>
                        <PersonEvents projectId={projectId} timeZone={timeZone} personId={value.uuid} />
                        {deleting !== null && (
                            <ConfirmDialog
                                title="Delete this property?"
                                confirm="Delete property"
                                confirmClass="danger"
                                cancelFirst
                                onConfirm={() => void deleteProperty(deleting)}
                                onCancel={() => setDeleting(null)}
                            >
                                <code>{deleting}</code> will be removed from this person, as <code>$unset</code> would. Later events may set it again.
                            </ConfirmDialog>
                        )}
                    </>
                )}
            </Loaded>
            {person.state === 'failed' && person.error.status === 404 && (
                <p>
                    <button type="button" class="secondary" onClick={() => navigate('/persons')}>
                        Back to persons
                    </button>
                </p>
            )}
        </main>
    );
}

/** The person's events, newest first, a page at a time. */
function PersonEvents({ projectId, timeZone, personId }: { projectId: number; timeZone: string; personId: string }) {
    const [offset, setOffset] = useState(0);
    const [events] = useLoad(
        () => runQuery<EventsAnswer>(projectId, eventsQuery({ after: 'all', offset, personId })),
        [projectId, personId, offset],
    );
    return (
        <section class="panel person-events" aria-label="Events">
            <div class="panel-head">
                <h2>Events</h2>
                <span class="muted">newest first</span>
            </div>
            <Loaded loadable={events}>
                {(answer) => {
                    const rows = answer.results.map(eventRow);
                    return (
                        <>
                            {rows.length === 0 ? <p class="muted persons-empty">No events.</p> : <EventsTable rows={rows} timeZone={timeZone} showPerson={false} />}
                            <Pager offset={offset} limit={EVENTS_PAGE} shown={rows.length} hasMore={answer.hasMore} onOffset={setOffset} />
                        </>
                    );
                }}
            </Loaded>
        </section>
    );
}
