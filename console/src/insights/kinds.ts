// Every kind of insight the console builds and shows, in the order of the kind picker.

import { sqlKind } from '../sql/kind';
import { funnels } from './funnels';
import type { InsightKind, QueryNode } from './kind';
import { lifecycle } from './lifecycle';
import { paths } from './paths';
import { retention } from './retention';
import { stickiness } from './stickiness';
import { trends } from './trends';

export const KINDS: InsightKind[] = [trends, funnels, retention, paths, stickiness, lifecycle, sqlKind];

/** The kind of a saved insight's query (an `InsightVizNode` wraps its `source`). */
export function kindOf(query: QueryNode): InsightKind | null {
    const inner = query.kind === 'InsightVizNode' || query.kind === 'DataVisualizationNode' || query.kind === 'DataTableNode'
        ? (query.source as QueryNode | undefined) ?? query
        : query;
    return KINDS.find((kind) => kind.kind === inner.kind || (kind === sqlKind && inner.kind === 'HogQLQuery')) ?? null;
}
