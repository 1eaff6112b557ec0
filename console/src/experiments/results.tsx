// One metric's results: the API's `ExperimentQuery` answer per variant (exposures, the metric's
// total, chance to win or p-value, the interval drawn against the zero line), the sample-ratio
// warning when the API raises it, and the stored daily timeseries as a chart.

import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { type ApiError, type Project, asApiError } from '../api';
import { formatCount, timeFormatter } from '../format';
import { runQuery } from '../query';
import { SeriesChart } from '../series-chart';
import { ErrorText } from '../ui';
import { ScrollTable } from '../ui-list';
import { type ArmResult, type Experiment, type ExperimentResult, type Metric, type Timeseries, experimentApi } from './api';

export function metricTitle(metric: Metric): string {
    if (metric.name) return metric.name;
    if (metric.metric_type === 'funnel') return `Funnel: ${(metric.series ?? []).map((step) => step.event ?? 'any event').join(' → ')}`;
    if (metric.metric_type === 'ratio') return `Ratio: ${metric.numerator?.event ?? '?'} / ${metric.denominator?.event ?? '?'}`;
    const source = metric.source;
    const math = source?.math ?? 'total';
    const what = source?.event ?? 'any event';
    if (math === 'total') return `Count of ${what}`;
    return `${math.replace('_', ' ')} of ${source?.math_property ? `${source.math_property} of ` : ''}${what}`;
}

const FAILURES: Record<string, string> = {
    'not-enough-exposures': 'fewer than 50 exposures',
    'not-enough-metric-data': 'too few conversions',
    'baseline-mean-is-zero': 'the baseline is zero',
};

const percent = (value: number, digits = 2) => `${(value * 100).toFixed(digits)}%`;
const signedPercent = (value: number) => `${value > 0 ? '+' : ''}${percent(value)}`;

function Num({ value, text, class: className }: { value: number | null | undefined; text?: (value: number) => string; class?: string }) {
    if (value === null || value === undefined || Number.isNaN(value)) return <span class="muted">–</span>;
    return (
        <data value={String(value)} class={className}>
            {text ? text(value) : value.toLocaleString(undefined, { maximumFractionDigits: 4 })}
        </data>
    );
}

function interval(arm: ArmResult): [number | null, number | null] | null {
    return arm.credible_interval ?? arm.confidence_interval ?? null;
}

export function MetricResults({ project, experiment, metric, index, secondary }: { project: Project; experiment: Experiment; metric: Metric; index: number; secondary?: boolean }) {
    const [result, setResult] = useState<ExperimentResult | null>(null);
    const [error, setError] = useState<ApiError | null>(null);
    const [loading, setLoading] = useState(true);
    // Bumped by Refresh: a forced recomputation, never the cache's answer.
    const [round, setRound] = useState(0);

    useEffect(() => {
        // Only this run's answer may land: an earlier request that ends later is dropped.
        const controller = new AbortController();
        const node = { kind: 'ExperimentQuery', experiment_id: experiment.id, metric };
        setLoading(true);
        setError(null);
        const answer =
            runQuery<ExperimentResult>(project.id, node, { signal: controller.signal, refresh: round > 0 ? 'force_blocking' : 'blocking' });
        answer.then(
            (value) => {
                if (controller.signal.aborted) return;
                setResult(value);
                setLoading(false);
            },
            (thrown) => {
                if (controller.signal.aborted) return;
                setError(asApiError(thrown));
                setLoading(false);
            },
        );
        return () => controller.abort();
    }, [project.id, experiment.id, experiment.start_date, experiment.end_date, metric, round]);

    function refresh() {
        // Busy in the same render as the click, not only once the effect has run.
        setLoading(true);
        setRound((value) => value + 1);
    }

    const method = result?.stats_method ?? experiment.stats_config?.method ?? 'bayesian';
    const bayesian = method === 'bayesian';
    const arms = result ? [...(result.baseline ? [result.baseline] : []), ...result.variant_results] : [];
    const srm = result?.sample_ratio_mismatch;
    const funnel = metric.metric_type === 'funnel';

    return (
        <section class={loading ? 'panel metric-results busy' : 'panel metric-results'} data-metric={index} aria-busy={loading ? 'true' : 'false'} aria-label={`Metric ${index + 1}: ${metricTitle(metric)}`}>
            <div class="panel-head metric-head">
                <h3>
                    {secondary ? 'Secondary' : 'Primary'} metric {index + 1}: {metricTitle(metric)}
                </h3>
                <div class="metric-tools">
                    {result?.last_refresh && (
                        <span class="muted">
                            computed{' '}
                            <time class="computed" dateTime={result.last_refresh}>
                                {timeFormatter(project.timezone)(new Date(result.last_refresh))}
                            </time>
                        </span>
                    )}
                    <button type="button" class="secondary" disabled={loading} onClick={refresh}>
                        {loading ? 'Computing…' : 'Refresh'}
                    </button>
                </div>
            </div>
            {error && <ErrorText error={error} />}
            {loading && !result && <p class="muted loading">Computing results…</p>}
            {result && (
                <>
                    {srm?.mismatch && (
                        <p class="srm-warning" role="alert">
                            Sample ratio mismatch: the exposures per variant differ from the configured split more than chance allows (p ={' '}
                            <Num value={srm.p_value} text={(value) => value.toExponential(2)} class="srm-p" />, below {srm.threshold}). Check how the flag is
                            evaluated and exposures are sent before trusting these results.
                        </p>
                    )}
                    <ScrollTable
                        class="results-table"
                        head={
                            <>
                                <th>Variant</th>
                                <th class="num">Exposures</th>
                                <th class="num">{funnel ? 'Conversions' : 'Total'}</th>
                                <th class="num">{funnel ? 'Rate' : 'Per exposure'}</th>
                                <th class="num">{bayesian ? 'Chance to win' : 'p-value'}</th>
                                <th class="num">{bayesian ? 'Credible interval' : 'Confidence interval'}</th>
                                <th>Significant</th>
                            </>
                        }
                    >
                        {arms.map((arm, at) => {
                            const bounds = interval(arm);
                            const baseline = at === 0 && result.baseline !== null;
                            return (
                                <tr key={arm.key} data-variant={arm.key}>
                                    <th scope="row">
                                        {arm.key}
                                        {baseline && <span class="badge baseline">baseline</span>}
                                    </th>
                                    <td class="num">
                                        <Num value={arm.number_of_samples} text={formatCount} class="exposures" />
                                    </td>
                                    <td class="num">
                                        <Num value={arm.sum} class="value" />
                                    </td>
                                    <td class="num">
                                        {/* Shown for reading only: the API's total over its exposures. */}
                                        <Num value={arm.number_of_samples > 0 ? arm.sum / arm.number_of_samples : null} text={(value) => (funnel ? percent(value) : value.toFixed(3))} />
                                    </td>
                                    <td class="num">
                                        {baseline ? (
                                            <span class="muted">–</span>
                                        ) : bayesian ? (
                                            <Num value={arm.chance_to_win} text={(value) => percent(value, 1)} class="chance-to-win" />
                                        ) : (
                                            <Num value={arm.p_value} text={(value) => value.toPrecision(3)} class="p-value" />
                                        )}
                                    </td>
                                    <td class="num interval-cell">
                                        {bounds ? (
                                            <>
                                                <Num value={bounds[0]} text={signedPercent} class="lower" /> to <Num value={bounds[1]} text={signedPercent} class="upper" />
                                            </>
                                        ) : (
                                            <span class="muted">–</span>
                                        )}
                                    </td>
                                    <td>
                                        {baseline ? (
                                            ''
                                        ) : arm.validation_failures?.length ? (
                                            <span class="muted">Not yet: {arm.validation_failures.map((failure) => FAILURES[failure] ?? failure).join(', ')}</span>
                                        ) : arm.significant === undefined ? (
                                            <span class="muted">–</span>
                                        ) : (
                                            <span class={arm.significant ? 'badge significant' : 'badge'}>{arm.significant ? 'Significant' : 'Not significant'}</span>
                                        )}
                                    </td>
                                </tr>
                            );
                        })}
                    </ScrollTable>
                    <IntervalChart arms={result.variant_results} bayesian={bayesian} />
                    <DailyResults project={project} experiment={experiment} metric={metric} />
                </>
            )}
        </section>
    );
}

/** Each variant's interval of the relative change against the baseline, with the zero line. */
function IntervalChart({ arms, bayesian }: { arms: ArmResult[]; bayesian: boolean }) {
    // Drawn at the box's own width, so the labels keep their size on a phone.
    const box = useRef<HTMLElement>(null);
    const [width, setWidth] = useState(600);
    useEffect(() => {
        const element = box.current;
        if (!element) return;
        const measure = () => setWidth(Math.max(300, Math.min(720, Math.round(element.clientWidth))));
        measure();
        const observer = new ResizeObserver(measure);
        observer.observe(element);
        return () => observer.disconnect();
    }, []);
    const drawn = arms
        .map((arm) => ({ arm, bounds: interval(arm) }))
        .filter((one): one is { arm: ArmResult; bounds: [number, number] } => one.bounds !== null && one.bounds[0] !== null && one.bounds[1] !== null);
    if (drawn.length === 0)
        return (
            <p class="muted interval-empty" ref={box as never}>
                The interval appears once each variant has enough exposures.
            </p>
        );
    const low = Math.min(0, ...drawn.map((one) => one.bounds[0]));
    const high = Math.max(0, ...drawn.map((one) => one.bounds[1]));
    const pad = (high - low) * 0.08 || 0.1;
    const [from, to] = [low - pad, high + pad];
    const left = width < 420 ? 70 : 100;
    const right = 40;
    const row = 46;
    const top = 6;
    const height = top + drawn.length * row + 22;
    const x = (value: number) => left + ((value - from) / (to - from)) * (width - left - right);
    return (
        <figure class="interval-chart" ref={box}>
            <svg viewBox={`0 0 ${width} ${height}`} role="img" aria-label={`${bayesian ? 'Credible' : 'Confidence'} intervals of the change against the baseline`}>
                <line class="zero-line" x1={x(0)} x2={x(0)} y1={top} y2={height - 18} />
                <text class="axis-label" x={x(0)} y={height - 4} text-anchor="middle">
                    0% (baseline)
                </text>
                {drawn.map(({ arm, bounds }, index) => {
                    const y = top + index * row + row * 0.62;
                    const tone = arm.significant ? (bounds[0] > 0 ? 'win' : bounds[1] < 0 ? 'loss' : 'flat') : 'flat';
                    const [x0, x1] = [x(bounds[0]), x(bounds[1])];
                    const close = x1 - x0 < 110;
                    return (
                        <g key={arm.key} data-variant={arm.key}>
                            <text class="variant-label" x={left - 12} y={y + 4} text-anchor="end">
                                {arm.key}
                            </text>
                            <rect class={`interval-bar ${tone}`} x={x0} y={y - 7} width={Math.max(2, x1 - x0)} height={14} rx={3} />
                            <text class="bound-label" x={x0} y={y - 11} text-anchor={close ? 'end' : 'middle'}>
                                {signedPercent(bounds[0])}
                            </text>
                            <text class="bound-label" x={x1} y={y - 11} text-anchor={close ? 'start' : 'middle'}>
                                {signedPercent(bounds[1])}
                            </text>
                        </g>
                    );
                })}
            </svg>
            <figcaption class="muted">
                {bayesian ? 'Credible' : 'Confidence'} interval of each variant's relative change against the baseline; right of the line is better.
            </figcaption>
        </figure>
    );
}

/** The daily cumulative results the API stores; computed on request by its timeseries job. */
function DailyResults({ project, experiment, metric }: { project: Project; experiment: Experiment; metric: Metric }) {
    const [series, setSeries] = useState<Timeseries | null>(null);
    const [error, setError] = useState<ApiError | null>(null);
    const [waiting, setWaiting] = useState(false);
    const [round, setRound] = useState(0);

    useEffect(() => {
        if (!metric.uuid || !metric.fingerprint) return;
        let current = true;
        experimentApi.timeseries(project.id, experiment.id, metric).then(
            (answer) => {
                if (!current) return;
                setSeries(answer);
                setError(null);
                const pending = answer.recalculation_status === 'pending' || answer.recalculation_status === 'in_progress';
                setWaiting(pending);
                if (pending) setTimeout(() => current && setRound((value) => value + 1), 1000);
            },
            (thrown) => current && setError(asApiError(thrown)),
        );
        return () => {
            current = false;
        };
    }, [project.id, experiment.id, metric, round]);

    async function recalculate() {
        setError(null);
        setWaiting(true);
        try {
            await experimentApi.recalculate(project.id, experiment.id, metric);
            setRound((value) => value + 1);
        } catch (thrown) {
            setError(asApiError(thrown));
            setWaiting(false);
        }
    }

    const chart = useMemo(() => {
        if (!series) return null;
        const days = Object.keys(series.timeseries).sort();
        const computed = days.filter((day) => series.timeseries[day]);
        if (computed.length === 0) return null;
        const keys: string[] = [];
        for (const day of computed) {
            const answer = series.timeseries[day]!;
            for (const arm of [...(answer.baseline ? [answer.baseline] : []), ...answer.variant_results]) if (!keys.includes(arm.key)) keys.push(arm.key);
        }
        const armOf = (day: string, key: string) => {
            const answer = series.timeseries[day];
            return answer ? [...(answer.baseline ? [answer.baseline] : []), ...answer.variant_results].find((arm) => arm.key === key) : undefined;
        };
        return {
            days,
            exposures: keys.map((key) => ({ label: key, values: days.map((day) => armOf(day, key)?.number_of_samples ?? null) })),
            totals: keys.map((key) => ({ label: key, values: days.map((day) => armOf(day, key)?.sum ?? null) })),
        };
    }, [series]);

    if (!metric.uuid || !metric.fingerprint) return null;
    return (
        <div class="daily-results">
            <div class="daily-head">
                <h4>Day by day (cumulative)</h4>
                <button type="button" class="secondary" disabled={waiting} onClick={recalculate}>
                    {waiting ? 'Computing…' : series?.computed_at ? 'Recompute days' : 'Compute days'}
                </button>
            </div>
            {error && <ErrorText error={error} />}
            {chart ? (
                <div class="daily-charts">
                    <div class="daily-chart">
                        <h5>Exposures</h5>
                        <SeriesChart x={chart.days} series={chart.exposures} kind="line" timezone={project.timezone} height={180} caption="Exposures per variant, cumulative by day" id={`daily-exposures-${metric.uuid}`} />
                    </div>
                    <div class="daily-chart">
                        <h5>{metric.metric_type === 'funnel' ? 'Conversions' : 'Metric total'}</h5>
                        <SeriesChart x={chart.days} series={chart.totals} kind="line" timezone={project.timezone} height={180} caption="Metric total per variant, cumulative by day" id={`daily-totals-${metric.uuid}`} />
                    </div>
                </div>
            ) : (
                <p class="muted">{waiting ? 'The days are being computed…' : 'No day computed yet.'}</p>
            )}
        </div>
    );
}
