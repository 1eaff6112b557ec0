// SQL insights: a HogQL query saved from the SQL editor, stored as PostHog stores it, a
// `DataVisualizationNode` around the `HogQLQuery` with the chosen view in `display`
// (ChartDisplayType). The editor is the SQL text box (with its suggestions); the result is the
// table, chart or number of the SQL page, in the stored view when the query given is the wrapper
// (or the answer echoes it), with the picker to look at it another way.

import { useEffect, useState } from 'preact/hooks';
import type { InsightKind, QueryNode, ResultProps } from '../insights/kind';
import { SqlEditor } from './editor';
import { ResultView, RowCount, type SqlAnswer, type View, ViewPicker, viewOfDisplay } from './result';

/** The SQL node of a query (a wrapper's `source`, or the node itself). */
function sourceOf(query: QueryNode): QueryNode {
    return (query.kind === 'DataVisualizationNode' || query.kind === 'DataTableNode') && query.source && typeof query.source === 'object'
        ? (query.source as QueryNode)
        : query;
}

/** `query` with its SQL replaced, in the shape it came (a wrapper keeps its other fields). */
function withSql(query: QueryNode, sql: string): QueryNode {
    const source = sourceOf(query);
    const node = { ...source, kind: source.kind === 'SqlDialectQuery' ? source.kind : 'HogQLQuery', query: sql };
    return source === query ? node : { ...query, source: node };
}

/** The view a stored query asks for (`display` of its DataVisualizationNode), else the table. */
function storedView(query: QueryNode, response: Record<string, unknown>): View {
    const echoed = response.query as QueryNode | undefined;
    return viewOfDisplay(query.display ?? (echoed && typeof echoed === 'object' ? echoed.display : undefined));
}

function SqlResult({ project, query, response, compact }: ResultProps) {
    const stored = storedView(query, response);
    const [view, setView] = useState<View>(stored);
    useEffect(() => setView(stored), [stored]);
    return (
        <div class="sql-kind-result">
            {!compact && (
                <div class="sql-result-head">
                    <ViewPicker view={view} onView={setView} />
                    <RowCount answer={response as SqlAnswer} />
                </div>
            )}
            <ResultView answer={response as SqlAnswer} view={view} timezone={project.timezone} compact={compact} />
        </div>
    );
}

export const sqlKind: InsightKind = {
    kind: 'SqlDialectQuery',
    label: 'SQL',
    // The node that runs (`/query/` takes no wrapper); saved, PostHog wraps it in a
    // DataVisualizationNode.
    create: () => ({ kind: 'HogQLQuery', query: 'SELECT event, count() AS events\nFROM events\nGROUP BY event\nORDER BY events DESC\nLIMIT 10' }),
    Editor: ({ project, query, onChange }) => {
        const source = sourceOf(query);
        return (
            <div class="sql-kind-editor">
                <SqlEditor projectId={project.id} value={typeof source.query === 'string' ? source.query : ''} rows={8} onChange={(sql) => onChange(withSql(query, sql))} />
            </div>
        );
    },
    Result: SqlResult,
};
