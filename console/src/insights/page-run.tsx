// Running an insight's query and showing its answer: the node as PostHog stores it (a wrapper
// around the kind's query), the run through `runQuery` with its progress and a Cancel button,
// rerun (debounced) when the query changes, and the kind's `Result` under it. Also used by the
// dashboards' tiles (`KindResult`) and the saved insight page.

import { useEffect, useRef, useState } from 'preact/hooks';
import { type ApiError, type Project, asApiError } from '../api';
import { formatCount } from '../format';
import { type Progress, runQuery } from '../query';
import { ErrorText } from '../ui';
import type { InsightKind, PersonsRequest, QueryNode } from './kind';
import { kindOf } from './kinds';

/** A saved insight as the API answers it (the fields the pages read). */
export interface Insight {
    id: number;
    short_id: string;
    name: string | null;
    derived_name: string | null;
    description: string | null;
    query: QueryNode | null;
    favorited: boolean;
    tags: string[];
    dashboards: number[];
    created_at: string;
    last_modified_at: string;
    last_modified_by?: { email?: string; first_name?: string } | null;
    created_by?: { email?: string; first_name?: string } | null;
    result?: unknown;
    columns?: unknown;
    types?: unknown;
    hasMore?: boolean;
    hogql?: string;
    resolved_date_range?: unknown;
    last_refresh?: string | null;
    is_cached?: boolean;
    query_status?: unknown;
    timezone?: string;
}

/** The name a person reads: the insight's own, else the one derived from its query. */
export function insightName(insight: Pick<Insight, 'name' | 'derived_name'>): string {
    return insight.name?.trim() || insight.derived_name?.trim() || 'Untitled insight';
}

/** The node that runs: the `source` of a wrapper (`InsightVizNode`, ...), else the node itself. */
export function innerQuery(query: QueryNode): QueryNode {
    if (query.kind === 'InsightVizNode' || query.kind === 'DataVisualizationNode' || query.kind === 'DataTableNode') {
        const source = query.source as QueryNode | undefined;
        if (source && typeof source === 'object') return source;
    }
    return query;
}

/** The node as PostHog saves it: an `InsightVizNode` around an insight query, a
 * `DataVisualizationNode` around SQL. */
export function storedQuery(query: QueryNode): QueryNode {
    if (query.kind === 'InsightVizNode' || query.kind === 'DataVisualizationNode' || query.kind === 'DataTableNode') return query;
    if (query.kind === 'HogQLQuery') return { kind: 'DataVisualizationNode', source: query };
    return { kind: 'InsightVizNode', source: query };
}

/** An insight's answer in the shape of a `/query/` response (its `result` as `results`). */
export function insightResponse(insight: Insight): Record<string, unknown> {
    const { result, ...rest } = insight as Insight & Record<string, unknown>;
    return { ...rest, results: result };
}

export type Run =
    | { state: 'idle' }
    | { state: 'running'; progress: Progress | null; cancel: () => void }
    | { state: 'done'; response: Record<string, unknown>; query: QueryNode }
    | { state: 'failed'; error: ApiError };

/** Runs `query` (the kind's node) whenever its JSON changes, `delay` ms after the last change;
 * a newer change or unmounting cancels the run before. `round` reruns it. */
export function useQueryRun(project: Project, query: QueryNode | null, delay = 400, round = 0): Run {
    const [run, setRun] = useState<Run>({ state: 'idle' });
    const text = query ? JSON.stringify(query) : '';
    useEffect(() => {
        if (!text) {
            setRun({ state: 'idle' });
            return;
        }
        const controller = new AbortController();
        let current = true;
        const cancel = () => controller.abort();
        const timer = setTimeout(() => {
            setRun({ state: 'running', progress: null, cancel });
            runQuery<Record<string, unknown>>(project.id, JSON.parse(text), {
                signal: controller.signal,
                onProgress: (progress) => current && setRun({ state: 'running', progress, cancel }),
            }).then(
                (response) => current && setRun({ state: 'done', response, query: JSON.parse(text) as QueryNode }),
                (error) => current && setRun({ state: 'failed', error: asApiError(error) }),
            );
        }, delay);
        // Shown at once, so a change never leaves an old answer looking current (RunView keeps
        // the last answer under the progress, dimmed).
        setRun({ state: 'running', progress: null, cancel });
        return () => {
            current = false;
            clearTimeout(timer);
            controller.abort();
        };
    }, [project.id, text, round]);
    return run;
}

/** "Running… 1,200 of 5,000 rows" with a Cancel button. */
export function Running({ progress, cancel }: { progress: Progress | null; cancel: () => void }) {
    const read = progress?.rows_read ?? 0;
    const total = progress?.estimated_rows_total ?? 0;
    return (
        <div class="insight-running" role="status">
            <span class="insight-spinner" aria-hidden="true" />
            <span>
                Running the query…
                {read > 0 && ` ${formatCount(read)}${total > read ? ` of ${formatCount(total)}` : ''} rows read`}
            </span>
            {total > 0 && <progress max={total} value={Math.min(read, total)} />}
            <button type="button" class="secondary" onClick={cancel}>
                Cancel
            </button>
        </div>
    );
}

/** The kind's `Result` for an answer, inside the wrapper that exposes the query it answers. */
export function KindResult({ project, kind, query, response, onPersons, compact }: {
    project: Project;
    kind: InsightKind | null;
    query: QueryNode;
    response: Record<string, unknown>;
    onPersons?: ((request: PersonsRequest) => void) | undefined;
    compact?: boolean | undefined;
}) {
    return (
        <div class={compact ? 'insight-answer compact' : 'insight-answer'} data-query={JSON.stringify(query)} data-kind={query.kind}>
            {kind ? (
                <kind.Result project={project} query={query} response={response} {...(onPersons ? { onPersons } : {})} {...(compact ? { compact } : {})} />
            ) : (
                <pre class="insight-raw">{JSON.stringify(response.results ?? response, null, 2)}</pre>
            )}
        </div>
    );
}

/** A run's state as the page shows it: progress and Cancel, the error, or the kind's Result. */
export function RunView({ project, query, run, onPersons, onRetry }: {
    project: Project;
    query: QueryNode;
    run: Run;
    onPersons?: ((request: PersonsRequest) => void) | undefined;
    onRetry?: (() => void) | undefined;
}) {
    // The answer before a rerun stays under the progress, dimmed, so the page does not jump.
    const last = useRef<{ query: QueryNode; response: Record<string, unknown> } | null>(null);
    if (run.state === 'done') last.current = { query: run.query, response: run.response };
    return (
        <section class="insight-result-panel panel" aria-label="Result" aria-busy={run.state === 'running'}>
            {run.state === 'running' && <Running progress={run.progress} cancel={run.cancel} />}
            {run.state === 'failed' && (
                <div class="insight-failed">
                    <ErrorText error={run.error} />
                    {onRetry && (
                        <button type="button" class="secondary" onClick={onRetry}>
                            Run again
                        </button>
                    )}
                </div>
            )}
            {run.state === 'idle' && <p class="muted">No query to run.</p>}
            {last.current && run.state !== 'failed' && (
                <div class={run.state === 'running' ? 'insight-stale' : undefined}>
                    <KindResult project={project} kind={kindOf(last.current.query) ?? kindOf(query)} query={last.current.query} response={last.current.response} onPersons={onPersons} />
                </div>
            )}
        </section>
    );
}

/** The query as JSON, to read or paste (for any kind, and when a kind's editor lacks a field). */
export function QueryJson({ query, onChange }: { query: QueryNode; onChange: (query: QueryNode) => void }) {
    const [text, setText] = useState(() => JSON.stringify(query, null, 2));
    const [error, setError] = useState<string | null>(null);
    const [open, setOpen] = useState(false);
    useEffect(() => {
        if (!open) setText(JSON.stringify(query, null, 2));
    }, [JSON.stringify(query), open]);
    return (
        <details class="query-json" onToggle={(event) => setOpen((event.currentTarget as HTMLDetailsElement).open)}>
            <summary>Query as JSON</summary>
            <label class="field">
                <span class="field-label">Query</span>
                <textarea id="insight-query-json" rows={10} spellcheck={false} value={text} onInput={(event) => setText(event.currentTarget.value)} />
            </label>
            {error && (
                <p class="form-error" role="alert">
                    {error}
                </p>
            )}
            <button
                type="button"
                class="secondary"
                onClick={() => {
                    try {
                        const parsed = JSON.parse(text) as unknown;
                        if (!parsed || typeof parsed !== 'object' || typeof (parsed as QueryNode).kind !== 'string') {
                            setError('The query must be an object with a "kind".');
                            return;
                        }
                        setError(null);
                        onChange(innerQuery(parsed as QueryNode));
                    } catch (thrown) {
                        setError(`Not JSON: ${(thrown as Error).message}`);
                    }
                }}
            >
                Apply JSON
            </button>
        </details>
    );
}

/** An insight's kind as a badge's text. */
export function kindLabel(query: QueryNode | null): string {
    if (!query) return '—';
    return kindOf(query)?.label ?? innerQuery(query).kind;
}
