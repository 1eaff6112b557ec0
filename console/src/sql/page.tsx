// SQL: write a HogQL query (with suggestions: tables, columns, functions, property keys), run it
// asynchronously (rows read so far, time, Cancel stops it on the server), see the answer as a
// table, a line or bar chart or a number, and save it as an insight. The query and the view are
// in the address (`?q=`, `?view=`), so a reload or a shared link keeps them.

import { useEffect, useRef, useState } from 'preact/hooks';
import { type ApiError, asApiError, http, projectPath } from '../api';
import { formatCount } from '../format';
import type { PageProps } from '../pages';
import { type Progress, runQuery } from '../query';
import { Link, setSearchParam } from '../router';
import { Dialog, ErrorText, Field, PageTitle, fieldError } from '../ui';
import { SqlEditor } from './editor';
import { ResultView, RowCount, type SqlAnswer, type View, ViewPicker, displayOfView, isView } from './result';

const EXAMPLE = 'SELECT event, count() AS events\nFROM events\nWHERE timestamp > now() - INTERVAL 7 DAY\nGROUP BY event\nORDER BY events DESC\nLIMIT 10';

type Run =
    | { state: 'idle' }
    | { state: 'running'; started: number; progress: Progress | null }
    | { state: 'done'; seconds: number }
    | { state: 'failed'; error: ApiError }
    | { state: 'cancelled' };

function ProgressText({ started, progress }: { started: number; progress: Progress | null }) {
    const [now, setNow] = useState(Date.now());
    useEffect(() => {
        const timer = setInterval(() => setNow(Date.now()), 100);
        return () => clearInterval(timer);
    }, []);
    const seconds = ((now - started) / 1000).toFixed(1);
    const read = progress?.rows_read ?? 0;
    // The estimate, when the server has one beyond what it read already.
    const total = progress?.estimated_rows_total ?? 0;
    const rows = read > 0 ? `${formatCount(read)}${total > read ? ` of ~${formatCount(total)}` : ''} rows read · ` : '';
    return (
        <span class="sql-progress">
            {total > read && <progress max={total} value={read} />}
            {`Running… ${rows}${seconds} s`}
        </span>
    );
}

interface Insight {
    id: number;
    short_id: string;
    name: string | null;
}

function SaveDialog({ projectId, query, view, onClose, onSaved }: { projectId: number; query: string; view: View; onClose: () => void; onSaved: (insight: Insight) => void }) {
    const [name, setName] = useState('');
    const [error, setError] = useState<ApiError | null>(null);
    const [busy, setBusy] = useState(false);
    const input = useRef<HTMLInputElement>(null);
    useEffect(() => input.current?.focus(), []);
    async function save(event: Event) {
        event.preventDefault();
        setBusy(true);
        setError(null);
        try {
            const insight = await http.post<Insight>(projectPath(projectId, 'insights/'), {
                name,
                saved: true,
                query: { kind: 'DataVisualizationNode', source: { kind: 'HogQLQuery', query }, display: displayOfView(view) },
            });
            onSaved(insight);
        } catch (thrown) {
            setError(asApiError(thrown));
            setBusy(false);
        }
    }
    const nameError = fieldError(error, 'name');
    return (
        <Dialog title="Save as insight" onClose={onClose}>
            <form class="sql-save" onSubmit={save}>
                <Field label="Name" error={nameError}>
                    <input ref={input} value={name} required maxLength={400} onInput={(event) => setName((event.target as HTMLInputElement).value)} />
                </Field>
                {error && !nameError && <ErrorText error={error} />}
                <div class="toolbar">
                    <button type="submit" class="primary" disabled={busy || !name.trim()}>
                        {busy ? 'Saving…' : 'Save'}
                    </button>
                    <button type="button" class="secondary" onClick={onClose}>
                        Cancel
                    </button>
                </div>
            </form>
        </Dialog>
    );
}

export default function Page({ project, location }: PageProps) {
    const fromAddress = location.search.get('q');
    const [sql, setSql] = useState(() => fromAddress ?? EXAMPLE);
    const [view, setView] = useState<View>(() => {
        const asked = location.search.get('view');
        return isView(asked) ? asked : 'table';
    });
    const [run, setRun] = useState<Run>({ state: 'idle' });
    // The last answer: kept (dimmed) while a new run goes, and after a cancel; an error hides it.
    const [answer, setAnswer] = useState<SqlAnswer | null>(null);
    const [saving, setSaving] = useState(false);
    const [saved, setSaved] = useState<Insight | null>(null);
    const running = useRef<AbortController | null>(null);
    const written = useRef<string | null>(fromAddress);
    // The text as typed, for Ctrl+Enter pressed before the page rendered the last key.
    const latest = useRef(sql);
    latest.current = sql;
    const edit = (next: string) => {
        latest.current = next;
        setSql(next);
    };

    // The address follows the text (a moment after the typing stops).
    useEffect(() => {
        if (written.current === sql) return;
        const timer = setTimeout(() => {
            written.current = sql;
            setSearchParam('q', sql);
        }, 300);
        return () => clearTimeout(timer);
    }, [sql]);
    // ... and the text follows the address when it changes from outside (back, a link).
    useEffect(() => {
        if (fromAddress !== null && fromAddress !== written.current) {
            written.current = fromAddress;
            setSql(fromAddress);
        }
    }, [fromAddress]);
    // Leaving the page stops its query.
    useEffect(() => () => running.current?.abort(), []);

    async function start() {
        const query = latest.current;
        if (!query.trim()) return;
        running.current?.abort();
        const controller = new AbortController();
        running.current = controller;
        written.current = query;
        setSearchParam('q', query);
        setSaved(null);
        const started = Date.now();
        setRun({ state: 'running', started, progress: null });
        try {
            const answer = await runQuery<SqlAnswer>(project.id, { kind: 'HogQLQuery', query }, {
                signal: controller.signal,
                onProgress: (progress) => {
                    if (running.current === controller) setRun({ state: 'running', started, progress });
                },
            });
            if (running.current === controller) {
                setAnswer(answer);
                setRun({ state: 'done', seconds: (Date.now() - started) / 1000 });
            }
        } catch (thrown) {
            if (running.current !== controller) return;
            const error = asApiError(thrown);
            if (error.code === 'cancelled') setRun({ state: 'cancelled' });
            else {
                setAnswer(null);
                setRun({ state: 'failed', error });
            }
        } finally {
            if (running.current === controller) running.current = null;
        }
    }

    function choose(next: View) {
        setView(next);
        setSearchParam('view', next === 'table' ? null : next);
    }

    return (
        <main class="page sql-page">
            <PageTitle title="SQL">
                <button type="button" class="secondary" disabled={!sql.trim()} onClick={() => setSaving(true)}>
                    Save as insight
                </button>
            </PageTitle>
            <section class="panel sql-panel">
                <SqlEditor projectId={project.id} value={sql} onChange={edit} onRun={start} rows={8} />
                <div class="toolbar sql-toolbar">
                    <button type="button" class="primary" onClick={start} disabled={!sql.trim()}>
                        Run
                    </button>
                    {run.state === 'running' && (
                        <button type="button" class="secondary" onClick={() => running.current?.abort()}>
                            Cancel
                        </button>
                    )}
                    <span class="muted sql-status" role="status">
                        {run.state === 'running' && <ProgressText started={run.started} progress={run.progress} />}
                        {run.state === 'done' && `Done in ${run.seconds.toFixed(1)} s`}
                        {run.state === 'cancelled' && 'The query was cancelled.'}
                        {run.state === 'idle' && <span class="sql-hint">Ctrl+Enter runs · Ctrl+Space suggests</span>}
                    </span>
                </div>
                {run.state === 'failed' && <ErrorText error={run.error} />}
            </section>
            {saved && (
                <p class="sql-saved" role="status">
                    {'Saved as '}
                    <Link href={`/insights/${saved.id}`} id="sql-saved-link">
                        {saved.name || `Insight ${saved.id}`}
                    </Link>
                </p>
            )}
            {answer && (
                <section class={run.state === 'running' ? 'panel sql-result stale' : 'panel sql-result'} aria-label="Result" aria-busy={run.state === 'running' ? 'true' : 'false'}>
                    <div class="sql-result-head">
                        <ViewPicker view={view} onView={choose} />
                        <RowCount answer={answer} />
                    </div>
                    <ResultView answer={answer} view={view} timezone={project.timezone} chartId="sql-chart" />
                </section>
            )}
            {saving && (
                <SaveDialog
                    projectId={project.id}
                    query={sql}
                    view={view}
                    onClose={() => setSaving(false)}
                    onSaved={(insight) => {
                        setSaving(false);
                        setSaved(insight);
                    }}
                />
            )}
        </main>
    );
}
