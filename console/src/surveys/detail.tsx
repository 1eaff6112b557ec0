// One survey: what it asks and to whom, its lifecycle (launch, stop, resume, archive, delete),
// the API's stats and its responses (paged, one column per question, archivable).

import { useState } from 'preact/hooks';
import { type ApiError, asApiError, http, withParams } from '../api';
import { formatCount } from '../format';
import type { PageProps } from '../pages';
import { Link, navigate, setSearchParam } from '../router';
import { ErrorText, Loaded, PageTitle, Pager, useLoad } from '../ui';
import { ScrollTable, offsetParam, setOffsetParam } from '../ui-list';
import { ConfirmDialog, useAction } from '../ui-form';
import { type Question, type Survey, answerText, statusOf, surveysPath } from './model';
import { StatusBadge } from './badge';
import { SurveyPreview } from './preview';

interface EventStats {
    total_count: number;
    unique_persons: number;
    first_seen: string | null;
    last_seen: string | null;
    unique_persons_only_seen: number;
    total_count_only_seen: number;
}

interface Stats {
    stats: Record<string, EventStats>;
    rates: { response_rate: number; dismissal_rate: number; unique_users_response_rate: number; unique_users_dismissal_rate: number };
}

interface Answer {
    question_id: string | null;
    question_index: number;
    question_text: string;
    question_type: string;
    answer: unknown;
}

interface Response {
    uuid: string;
    distinct_id: string;
    submitted_at: string;
    answers: Answer[];
    extra: { current_url?: string | null; browser?: string | null };
}

interface ResponsesPage {
    results: Response[];
    has_more: boolean;
    limit: number;
    offset: number;
}

const RESPONSES_LIMIT = 20;
const EVENTS: [string, string][] = [
    ['survey shown', 'Shown'],
    ['survey dismissed', 'Dismissed'],
    ['survey sent', 'Sent'],
];

function Stat({ name, label, value, suffix }: { name: string; label: string; value: number; suffix?: string }) {
    return (
        <div class="sv-stat">
            <span class="stat-label">{label}</span>
            <span class="stat-value">
                <data value={String(value)} data-stat={name}>
                    {suffix ? `${value}${suffix}` : formatCount(value)}
                </data>
            </span>
        </div>
    );
}

function StatsPanel({ projectId, survey, excludeArchived, round, onRefresh }: { projectId: number; survey: Survey; excludeArchived: boolean; round: number; onRefresh: () => void }) {
    const [stats] = useLoad(
        () => http.get<Stats>(withParams(surveysPath(projectId, `${survey.id}/stats/`), { exclude_archived: excludeArchived ? 'true' : null })),
        [projectId, survey.id, excludeArchived, round],
    );
    return (
        <section class="panel" aria-label="Stats">
            <div class="panel-head">
                <h2>Stats</h2>
                <button type="button" class="secondary" onClick={onRefresh}>
                    Refresh
                </button>
            </div>
            <Loaded loadable={stats}>
                {(value) => (
                    <>
                        <div class="sv-stats">
                            {EVENTS.map(([event, label]) => {
                                const counts = value.stats[event];
                                const persons = counts?.unique_persons ?? 0;
                                return (
                                    <div class="sv-stat" key={event}>
                                        <span class="stat-label">{label}</span>
                                        <span class="stat-value">
                                            <data value={String(counts?.total_count ?? 0)} data-stat={`${event}.total_count`}>
                                                {formatCount(counts?.total_count ?? 0)}
                                            </data>
                                        </span>
                                        <span class="muted">
                                            <data value={String(persons)} data-stat={`${event}.unique_persons`}>
                                                {formatCount(persons)}
                                            </data>{' '}
                                            {persons === 1 ? 'person' : 'persons'}
                                        </span>
                                    </div>
                                );
                            })}
                        </div>
                        <div class="sv-stats">
                            <Stat name="response_rate" label="Response rate" value={value.rates.response_rate} suffix="%" />
                            <Stat name="dismissal_rate" label="Dismissal rate" value={value.rates.dismissal_rate} suffix="%" />
                            <Stat name="unique_users_response_rate" label="Persons responding" value={value.rates.unique_users_response_rate} suffix="%" />
                            <Stat name="unique_users_dismissal_rate" label="Persons dismissing" value={value.rates.unique_users_dismissal_rate} suffix="%" />
                        </div>
                    </>
                )}
            </Loaded>
        </section>
    );
}

function ResponsesPanel({ projectId, survey, excludeArchived, offset, questionId, refreshed, onChanged }: { projectId: number; survey: Survey; excludeArchived: boolean; offset: number; questionId: string; refreshed: number; onChanged: () => void }) {
    const [round, setRound] = useState(0);
    const [error, setError] = useState<ApiError | null>(null);
    const [page] = useLoad(
        () =>
            http.get<ResponsesPage>(
                withParams(surveysPath(projectId, `${survey.id}/responses/`), {
                    limit: RESPONSES_LIMIT,
                    offset,
                    question_id: questionId,
                    exclude_archived: excludeArchived ? 'true' : null,
                }),
            ),
        [projectId, survey.id, excludeArchived, offset, questionId, round, refreshed],
    );
    const [archived] = useLoad(() => http.get<string[]>(surveysPath(projectId, `${survey.id}/archived-response-uuids/`)), [projectId, survey.id, round, refreshed]);
    const archivedSet = new Set(archived.state === 'done' ? archived.value : []);
    const questions = questionId ? survey.questions.filter((q) => q.id === questionId) : survey.questions;

    async function toggle(uuid: string, archive: boolean) {
        setError(null);
        try {
            await http.post(surveysPath(projectId, `${survey.id}/responses/${uuid}/${archive ? 'archive' : 'unarchive'}/`));
            setRound((r) => r + 1);
            onChanged();
        } catch (thrown) {
            setError(asApiError(thrown));
        }
    }

    return (
        <section class="panel" aria-label="Responses">
            <div class="panel-head">
                <h2>Responses</h2>
                <label class="field sv-inline">
                    <span class="field-label">Question</span>
                    <select value={questionId} onChange={(e) => { setSearchParam('offset', null); setSearchParam('question', e.currentTarget.value || null); }}>
                        <option value="">Every question</option>
                        {survey.questions.map((q, i) => (
                            <option key={q.id ?? i} value={q.id ?? ''}>
                                {i + 1}. {q.question}
                            </option>
                        ))}
                    </select>
                </label>
            </div>
            {error && <ErrorText error={error} />}
            <Loaded loadable={page}>
                {(value) =>
                    value.results.length === 0 ? (
                        <p class="muted">No responses yet.</p>
                    ) : (
                        <>
                            <ScrollTable
                                class="sv-responses"
                                head={
                                    <>
                                        <th>Submitted</th>
                                        <th>Person</th>
                                        {questions.map((q: Question, i) => (
                                            <th key={q.id ?? i}>{q.question}</th>
                                        ))}
                                        <th />
                                    </>
                                }
                            >
                                {value.results.map((row) => {
                                    const isArchived = archivedSet.has(row.uuid);
                                    return (
                                        <tr key={row.uuid} data-uuid={row.uuid} class={isArchived ? 'sv-archived-row' : undefined}>
                                            <td>{new Date(row.submitted_at).toLocaleString()}</td>
                                            <td class="sv-who">{row.distinct_id}</td>
                                            {questions.map((q, i) => {
                                                const answer = row.answers.find((a) => (q.id && a.question_id === q.id) || (!a.question_id && a.question_index === survey.questions.indexOf(q)));
                                                return (
                                                    <td key={q.id ?? i} data-question={q.id ?? ''}>
                                                        {answerText(answer?.answer)}
                                                    </td>
                                                );
                                            })}
                                            <td class="sv-row-actions">
                                                {isArchived && <span class="badge">archived</span>}{' '}
                                                <button type="button" class="link" onClick={() => toggle(row.uuid, !isArchived)}>
                                                    {isArchived ? 'Unarchive' : 'Archive'}
                                                </button>
                                            </td>
                                        </tr>
                                    );
                                })}
                            </ScrollTable>
                            <Pager offset={offset} limit={RESPONSES_LIMIT} shown={value.results.length} hasMore={value.has_more} onOffset={setOffsetParam} />
                        </>
                    )
                }
            </Loaded>
        </section>
    );
}

function Targeting({ survey }: { survey: Survey }) {
    const properties = (survey.targeting_flag?.filters?.groups ?? []).flatMap((g) => g.properties ?? []);
    const parts: string[] = [];
    if (survey.conditions?.url) parts.push(`URL contains “${survey.conditions.url}”`);
    if (survey.linked_flag) parts.push(`flag ${survey.linked_flag.key} is on`);
    for (const p of properties) parts.push(`${p.key} = ${answerText(p.value)}`);
    return <p>{parts.length ? parts.join('; ') : 'Everyone'}</p>;
}

export function SurveyDetail({ project, location, id }: PageProps & { id: string }) {
    const [survey, reload] = useLoad(() => http.get<Survey>(surveysPath(project.id, `${id}/`)), [project.id, id]);
    const { busy, error, run: attempt } = useAction();
    const [deleting, setDeleting] = useState(false);
    const [statsRound, setStatsRound] = useState(0);
    const [refreshed, setRefreshed] = useState(0);
    const excludeArchived = location.search.get('exclude_archived') === 'true';
    const offset = offsetParam(location.search);
    const questionId = location.search.get('question') ?? '';

    async function act(run: () => Promise<unknown>, after?: () => void) {
        await attempt(async () => {
            await run();
            if (after) after();
            else reload();
        });
    }
    const path = surveysPath(project.id, `${id}/`);

    return (
        <Loaded loadable={survey}>
            {(value) => {
                const status = statusOf(value);
                return (
                    <main class="page sv-page">
                        <PageTitle title={value.name}>
                            <StatusBadge survey={value} />
                            <Link href={`/surveys/${value.id}/edit`} class="sv-button secondary">
                                Edit
                            </Link>
                            {status === 'draft' && !value.archived && (
                                <button type="button" class="primary" disabled={busy} onClick={() => act(() => http.post(`${path}launch/`))}>
                                    Launch
                                </button>
                            )}
                            {status === 'running' && !value.archived && (
                                <button type="button" class="secondary" disabled={busy} onClick={() => act(() => http.post(`${path}stop/`))}>
                                    Stop
                                </button>
                            )}
                            {status === 'stopped' && !value.archived && (
                                <button type="button" class="secondary" disabled={busy} onClick={() => act(() => http.patch(path, { end_date: null }))}>
                                    Resume
                                </button>
                            )}
                            <button type="button" class="secondary" disabled={busy} onClick={() => act(() => http.patch(path, { archived: !value.archived }))}>
                                {value.archived ? 'Unarchive' : 'Archive'}
                            </button>
                            <button type="button" class="secondary danger" disabled={busy} onClick={() => setDeleting(true)}>
                                Delete
                            </button>
                        </PageTitle>
                        {error && <ErrorText error={error} />}
                        <p class="muted">
                            <Link href="/surveys">All surveys</Link>
                            {value.start_date && ` · started ${new Date(value.start_date).toLocaleString()}`}
                            {value.end_date && ` · ended ${new Date(value.end_date).toLocaleString()}`}
                        </p>
                        <div class="sv-detail">
                            <section class="panel">
                                <h2>Questions</h2>
                                {value.description && <p>{value.description}</p>}
                                <ol class="sv-question-list">
                                    {value.questions.map((q, i) => (
                                        <li key={q.id ?? i} data-question-id={q.id}>
                                            <strong>{q.question}</strong> <span class="muted">({q.type.replace('_', ' ')}{q.type === 'rating' ? `, ${q.display ?? 'number'} ${q.display !== 'emoji' && q.scale === 10 ? 0 : 1}–${q.scale}` : ''})</span>
                                            {q.choices && <div class="muted">{q.choices.join(' · ')}</div>}
                                        </li>
                                    ))}
                                </ol>
                                <h2>Shown to</h2>
                                <p class="muted">{value.type === 'api' ? 'API survey: your code shows it.' : 'Popover, shown by posthog-js.'}</p>
                                <Targeting survey={value} />
                            </section>
                            <aside class="panel">
                                <h2>Preview</h2>
                                <SurveyPreview questions={value.questions} appearance={value.appearance} />
                            </aside>
                        </div>
                        <label class="sv-check">
                            <input type="checkbox" checked={excludeArchived} onChange={(e) => { setSearchParam('offset', null); setSearchParam('exclude_archived', e.currentTarget.checked ? 'true' : null); }} /> Leave out archived responses
                        </label>
                        <StatsPanel projectId={project.id} survey={value} excludeArchived={excludeArchived} round={statsRound + refreshed} onRefresh={() => setRefreshed((r) => r + 1)} />
                        <ResponsesPanel projectId={project.id} survey={value} excludeArchived={excludeArchived} offset={offset} questionId={questionId} refreshed={refreshed} onChanged={() => setStatsRound((r) => r + 1)} />
                        {deleting && (
                            <ConfirmDialog
                                title="Delete survey"
                                confirm="Delete"
                                actionsClass="sv-row"
                                busy={busy}
                                onConfirm={() => act(() => http.delete(path), () => navigate('/surveys'))}
                                onCancel={() => setDeleting(false)}
                            >
                                Delete <strong>{value.name}</strong>, its flags and its archived responses? Its events stay.
                            </ConfirmDialog>
                        )}
                    </main>
                );
            }}
        </Loaded>
    );
}
