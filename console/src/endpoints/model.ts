// Endpoints as the API shows them (reference 2.2, 2.6).

import { projectPath } from '../api';

export interface Variable {
    variableId?: string;
    code_name: string;
    value: unknown;
}

export interface HogQLNode {
    kind: string;
    query?: string;
    variables?: Record<string, Variable>;
    [key: string]: unknown;
}

export interface Column {
    name: string;
    type: string;
}

export interface Materialization {
    status?: string;
    can_materialize: boolean;
    reason?: string | null;
    last_materialized_at?: string | null;
    error?: string;
    sync_frequency?: string;
}

export interface Endpoint {
    id: string;
    name: string;
    description: string;
    query: HogQLNode;
    is_active: boolean;
    cache_age_seconds: number | null;
    url: string;
    endpoint_path: string;
    created_at: string;
    updated_at: string;
    is_materialized: boolean;
    current_version: number;
    versions_count: number;
    materialization: Materialization;
    columns: Column[];
    last_executed_at: string | null;
}

export interface Version {
    id: string;
    version: number;
    query: HogQLNode;
    description: string;
    is_active: boolean;
    cache_age_seconds: number | null;
    is_materialized: boolean;
    sync_frequency: string | null;
    columns: Column[];
    created_at: string;
    created_by: { email?: string } | null;
}

export interface RunAnswer {
    results: unknown[][];
    columns: string[];
    hasMore?: boolean;
    limit?: number;
    offset?: number;
    endpoint_version?: number;
    endpoint_materialized?: boolean;
    endpoint_materialized_at?: string | null;
    is_cached?: boolean;
    last_refresh?: string;
}

export const SYNC_FREQUENCIES = ['5min', '15min', '30min', '1hour', '6hour', '12hour', '24hour', '7day', '30day'];

export function endpointsPath(projectId: number, rest = ''): string {
    return projectPath(projectId, `endpoints/${rest}`);
}

export function endpointPath(projectId: number, name: string, rest = ''): string {
    return endpointsPath(projectId, `${encodeURIComponent(name)}/${rest}`);
}

/** The variables a node defines, as a list. */
export function variablesOf(node: HogQLNode | null | undefined): [string, Variable][] {
    return Object.entries(node?.variables ?? {});
}

/** A cell as text. */
export function cellText(value: unknown): string {
    if (value === null || value === undefined) return '';
    if (typeof value === 'object') return JSON.stringify(value);
    return String(value);
}

/** The variables node for `rows` (code name and default value), ids kept where names stay. */
export function variablesNode(rows: { code_name: string; value: string }[], previous?: Record<string, Variable>): Record<string, Variable> {
    const out: Record<string, Variable> = {};
    rows.forEach((row, index) => {
        const name = row.code_name.trim();
        if (!name) return;
        const kept = Object.entries(previous ?? {}).find(([, v]) => v.code_name === name)?.[0];
        const id = kept ?? `var-${name}-${index}`;
        out[id] = { variableId: id, code_name: name, value: row.value };
    });
    return out;
}
