// The contract between the insight page (page.tsx: list, open, save, rename, dashboards,
// persons) and each kind of insight (trends.tsx, funnels.tsx, ...): how to start a new query of
// that kind, its editor, and how to show its result. Each kind's file exports one `InsightKind`;
// kinds.ts lists them.

import type { ComponentType } from 'preact';
import type { Project } from '../api';

/** A query node as the API takes it (`{"kind": "TrendsQuery", "series": [...], ...}`). */
export type QueryNode = { kind: string } & Record<string, unknown>;

/** A list of persons to show: an actors query the API runs (`ActorsQuery` with an
 * `InsightActorsQuery` source, as PostHog's persons modal does), and its title. */
export interface PersonsRequest {
    title: string;
    query: QueryNode;
}

export interface EditorProps {
    project: Project;
    query: QueryNode;
    onChange: (query: QueryNode) => void;
}

export interface ResultProps {
    project: Project;
    query: QueryNode;
    /** The API's answer to `query` (its `results` and the rest of the response). */
    response: Record<string, unknown>;
    /** Opens the persons behind a data point (a day of a series, a funnel step, a cell). */
    onPersons?: (request: PersonsRequest) => void;
    /** Smaller, without the legend or table (a dashboard tile). */
    compact?: boolean;
}

export interface InsightKind {
    /** The node's `kind`: `TrendsQuery`, `FunnelsQuery`, ... */
    kind: string;
    /** As a person calls it: Trends, Funnel, Retention, ... */
    label: string;
    /** A new query of this kind that runs as it is (say, `$pageview` over the last 7 days). */
    create: () => QueryNode;
    Editor: ComponentType<EditorProps>;
    Result: ComponentType<ResultProps>;
}
