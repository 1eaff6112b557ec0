// The experiment routes' shapes as the API answers them (PostHog's ExperimentSerializer,
// `ExperimentQueryResponse`, the stored daily timeseries), and the calls the pages make.

import { http, type Paged, projectPath, withParams } from '../api';

export interface Metric {
    kind: 'ExperimentMetric';
    metric_type: 'mean' | 'funnel' | 'ratio';
    name?: string;
    uuid?: string;
    fingerprint?: string;
    source?: { kind: string; event?: string | null; math?: string; math_property?: string };
    series?: { kind: string; event?: string | null }[];
    numerator?: { kind: string; event?: string | null };
    denominator?: { kind: string; event?: string | null };
    [other: string]: unknown;
}

export interface VariantSplit {
    key: string;
    rollout_percentage: number;
    name?: string | null;
}

export interface Experiment {
    id: number;
    name: string;
    description: string | null;
    feature_flag_key: string;
    feature_flag: { id: number; key: string; active: boolean; filters: { multivariate?: { variants: VariantSplit[] } | null } } | null;
    parameters: { feature_flag_variants?: VariantSplit[] } | null;
    metrics: Metric[];
    metrics_secondary: Metric[];
    start_date: string | null;
    end_date: string | null;
    archived: boolean;
    status: 'draft' | 'running' | 'paused' | 'stopped';
    stats_config: { method?: 'bayesian' | 'frequentist' } | null;
    conclusion: string | null;
    conclusion_comment: string | null;
    created_at: string;
}

export interface ArmResult {
    key: string;
    number_of_samples: number;
    sum: number;
    sum_squares: number;
    denominator_sum?: number;
    step_counts?: number[];
    validation_failures?: string[];
    method?: 'bayesian' | 'frequentist';
    chance_to_win?: number;
    credible_interval?: [number | null, number | null];
    p_value?: number;
    confidence_interval?: [number | null, number | null];
    significant?: boolean;
    expected_loss?: number;
}

export interface SampleRatioMismatch {
    mismatch: boolean;
    p_value: number;
    chi_square: number;
    threshold: number;
    expected: Record<string, number>;
    observed: Record<string, number>;
}

export interface ExperimentResult {
    kind: 'ExperimentQueryResponse';
    baseline: ArmResult | null;
    variant_results: ArmResult[];
    stats_method: 'bayesian' | 'frequentist';
    sample_ratio_mismatch?: SampleRatioMismatch | null;
    last_refresh?: string;
}

export interface Timeseries {
    status: string;
    recalculation_status: string | null;
    computed_at: string | null;
    errors: unknown;
    timeseries: Record<string, ExperimentResult | null>;
}

export interface EligibleFlag {
    id: number;
    key: string;
    name: string;
    active: boolean;
    filters: { multivariate?: { variants: VariantSplit[] } | null };
}

const path = (projectId: number, rest = '') => projectPath(projectId, `experiments/${rest}`);

export const experimentApi = {
    list: (projectId: number, params: Record<string, string | number | undefined>) =>
        http.get<Paged<Experiment>>(withParams(path(projectId), params)),
    get: (projectId: number, id: string | number) => http.get<Experiment>(path(projectId, `${id}/`)),
    create: (projectId: number, body: unknown) => http.post<Experiment>(path(projectId), body),
    action: (projectId: number, id: number, action: string, body?: unknown) => http.post<Experiment>(path(projectId, `${id}/${action}/`), body ?? {}),
    eligibleFlags: (projectId: number) =>
        http.get<Paged<EligibleFlag>>(withParams(path(projectId, 'eligible_feature_flags/'), { limit: 100 })),
    timeseries: (projectId: number, id: number, metric: Metric) =>
        http.get<Timeseries>(withParams(path(projectId, `${id}/timeseries_results/`), { metric_uuid: metric.uuid, fingerprint: metric.fingerprint })),
    recalculate: (projectId: number, id: number, metric: Metric) =>
        http.post<{ status: string }>(path(projectId, `${id}/recalculate_timeseries/`), { metric, fingerprint: metric.fingerprint }),
};
