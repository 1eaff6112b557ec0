// The feature flag routes' shapes as the API answers them (PostHog's FeatureFlagSerializer), and
// the SDKs' evaluation route the "what does a user get" panel calls with the project token.

import { http, type Paged, projectPath, request, withParams } from '../api';

export interface PropertyFilter {
    key: string;
    type: 'person' | 'cohort' | string;
    operator?: string;
    value: unknown;
}

export interface ReleaseGroup {
    properties: PropertyFilter[];
    rollout_percentage: number | null;
    variant?: string | null;
}

export interface Variant {
    key: string;
    name?: string | null;
    rollout_percentage: number;
}

export interface FlagFilters {
    groups: ReleaseGroup[];
    multivariate?: { variants: Variant[] } | null;
    payloads?: Record<string, unknown>;
    aggregation_group_type_index?: number | null;
}

export interface Flag {
    id: number;
    key: string;
    name: string;
    active: boolean;
    deleted: boolean;
    filters: FlagFilters;
    version: number;
    created_at: string;
    updated_at?: string;
    created_by?: { email: string } | null;
}

export interface Cohort {
    id: number;
    name: string;
}

export const flagsPath = (projectId: number, rest = '') => projectPath(projectId, `feature_flags/${rest}`);

export const flagApi = {
    list: (projectId: number, params: Record<string, string | number | undefined>) =>
        http.get<Paged<Flag>>(withParams(flagsPath(projectId), params)),
    get: (projectId: number, id: number | string) => http.get<Flag>(flagsPath(projectId, `${id}/`)),
    create: (projectId: number, body: unknown) => http.post<Flag>(flagsPath(projectId), body),
    update: (projectId: number, id: number, body: unknown) => http.patch<Flag>(flagsPath(projectId, `${id}/`), body),
    cohorts: (projectId: number) => http.get<Paged<Cohort>>(withParams(projectPath(projectId, 'cohorts/'), { limit: 200 })),
};

/** One flag's answer from `/flags/` (v4 shape). */
export interface Evaluation {
    key: string;
    enabled: boolean;
    variant: string | null;
    reason?: { code: string; description?: string | null } | null;
    metadata?: { payload?: unknown } | null;
}

/** What an SDK gets for `distinctId`: the public route the SDKs call, with the project token. */
export async function evaluate(
    token: string,
    key: string,
    distinctId: string,
    personProperties: Record<string, unknown>,
): Promise<Evaluation | null> {
    const answer = await request<{ flags?: Record<string, Evaluation> }>('POST', '/flags/?v=2', {
        token,
        distinct_id: distinctId,
        person_properties: personProperties,
        flag_keys_to_evaluate: [key],
    });
    return answer?.flags?.[key] ?? null;
}
