// Experiments: the list (status, archived, search, pages), a new experiment on a new flag or an
// eligible existing one (variants, metrics, statistics), and one experiment: its lifecycle
// (launch, pause, resume, end, ship a variant, archive) through the API's actions, and each
// metric's results as the API computes them.

import { useState } from 'preact/hooks';
import { type ApiError, type Project } from '../api';
import { dayFormatter, timeFormatter } from '../format';
import type { PageProps } from '../pages';
import { Link, navigate, setSearchParam } from '../router';
import { Dialog, ErrorText, Field, Loaded, PageTitle, fieldError, useLoad } from '../ui';
import { ListTable, SearchForm, offsetParam } from '../ui-list';
import { useAction } from '../ui-form';
import { type Experiment, type Metric, type VariantSplit, experimentApi } from './api';
import { MetricResults, metricTitle } from './results';

const LIMIT = 20;

export default function Page({ project, location, rest }: PageProps) {
    if (rest.length === 0) return <ExperimentList project={project} search={location.search} />;
    if (rest[0] === 'new') return <NewExperiment project={project} />;
    return <ExperimentPage project={project} id={rest[0]!} />;
}

const STATUS_LABEL: Record<Experiment['status'], string> = { draft: 'Draft', running: 'Running', paused: 'Paused', stopped: 'Complete' };

function StatusBadge({ experiment }: { experiment: Experiment }) {
    return (
        <span class={`badge status-${experiment.status}`} data-status={experiment.status}>
            {STATUS_LABEL[experiment.status] ?? experiment.status}
            {experiment.archived ? ' · archived' : ''}
        </span>
    );
}

// ---------------------------------------------------------------------------------------------
// The list

function ExperimentList({ project, search }: { project: Project; search: URLSearchParams }) {
    const status = search.get('status') ?? '';
    const archived = search.get('archived') === 'true';
    const text = search.get('search') ?? '';
    const offset = offsetParam(search);
    const [list] = useLoad(
        () => experimentApi.list(project.id, { limit: LIMIT, offset, status: status || undefined, archived: archived ? 'true' : undefined, search: text || undefined }),
        [project.id, status, archived, text, offset],
    );
    const day = dayFormatter(project.timezone);
    const refilter = (name: string, value: string | null) => {
        setSearchParam('offset', null);
        setSearchParam(name, value);
    };
    return (
        <main class="page experiments">
            <PageTitle title="Experiments">
                <button type="button" class="primary" onClick={() => navigate('/experiments/new')}>
                    New experiment
                </button>
            </PageTitle>
            <SearchForm bare label="Search experiments" placeholder="Search by name" value={text} onSearch={(typed) => refilter('search', typed)}>
                <select aria-label="Status" value={status} onChange={(event) => refilter('status', event.currentTarget.value)}>
                    <option value="">Any status</option>
                    <option value="draft">Draft</option>
                    <option value="running">Running</option>
                    <option value="paused">Paused</option>
                    <option value="complete">Complete</option>
                </select>
                <label class="check">
                    <input type="checkbox" checked={archived} onChange={(event) => refilter('archived', event.currentTarget.checked ? 'true' : null)} /> Archived
                </label>
            </SearchForm>
            <Loaded loadable={list}>
                {(page) => (
                    <>
                        <ListTable
                            class="experiment-table"
                            shown={page.results.length}
                            empty={<>No experiments{status || archived || text ? ' match' : ' yet'}.</>}
                            offset={offset}
                            limit={LIMIT}
                            hasMore={Boolean(page.next)}
                            head={
                                <>
                                    <th>Name</th>
                                    <th>Flag</th>
                                    <th>Status</th>
                                    <th class="experiment-date">Started</th>
                                    <th class="experiment-date">Ended</th>
                                </>
                            }
                        >
                            {page.results.map((experiment) => (
                                <tr key={experiment.id} data-experiment={experiment.name}>
                                    <td class="experiment-name">
                                        <Link href={`/experiments/${experiment.id}`}>{experiment.name}</Link>
                                    </td>
                                    <td class="experiment-flag">
                                        <code>{experiment.feature_flag_key}</code>
                                    </td>
                                    <td class="experiment-status">
                                        <StatusBadge experiment={experiment} />
                                    </td>
                                    <td class="experiment-date experiment-start">{experiment.start_date ? day(new Date(experiment.start_date)) : '–'}</td>
                                    <td class="experiment-date experiment-end">{experiment.end_date ? day(new Date(experiment.end_date)) : '–'}</td>
                                </tr>
                            ))}
                        </ListTable>
                    </>
                )}
            </Loaded>
        </main>
    );
}

// ---------------------------------------------------------------------------------------------
// A new experiment

interface MetricForm {
    name: string;
    type: 'mean' | 'funnel';
    event: string;
    math: string;
    property: string;
    steps: string;
}

const emptyMetric = (): MetricForm => ({ name: '', type: 'mean', event: '', math: 'total', property: '', steps: '' });

const MATHS: [string, string][] = [
    ['total', 'Count of events'],
    ['sum', 'Sum of a property'],
    ['avg', 'Average of a property'],
    ['min', 'Minimum of a property'],
    ['max', 'Maximum of a property'],
    ['unique_session', 'Unique sessions'],
];

function metricOf(form: MetricForm): Metric {
    const named = form.name.trim() ? { name: form.name.trim() } : {};
    if (form.type === 'funnel') {
        const steps = form.steps
            .split(/[\n,]/)
            .map((step) => step.trim())
            .filter(Boolean);
        return { kind: 'ExperimentMetric', metric_type: 'funnel', ...named, series: steps.map((event) => ({ kind: 'EventsNode', event })) };
    }
    const withProperty = ['sum', 'avg', 'min', 'max'].includes(form.math);
    return {
        kind: 'ExperimentMetric',
        metric_type: 'mean',
        ...named,
        source: { kind: 'EventsNode', event: form.event.trim(), math: form.math, ...(withProperty ? { math_property: form.property.trim() } : {}) },
    };
}

function NewExperiment({ project }: { project: Project }) {
    const [name, setName] = useState('');
    const [description, setDescription] = useState('');
    const [flagMode, setFlagMode] = useState<'new' | 'existing'>('new');
    const [flagKey, setFlagKey] = useState('');
    const [existing, setExisting] = useState('');
    const [variants, setVariants] = useState<{ key: string; rollout: string }[]>([
        { key: 'control', rollout: '50' },
        { key: 'test', rollout: '50' },
    ]);
    const [metrics, setMetrics] = useState<MetricForm[]>([emptyMetric()]);
    const [method, setMethod] = useState<'bayesian' | 'frequentist'>('bayesian');
    const { busy: saving, error, run: attempt } = useAction();
    const [eligible] = useLoad(() => experimentApi.eligibleFlags(project.id).then((page) => page.results), [project.id]);
    const flags = eligible.state === 'done' ? eligible.value : [];

    const changeMetric = (index: number, patch: Partial<MetricForm>) => setMetrics(metrics.map((metric, at) => (at === index ? { ...metric, ...patch } : metric)));
    const changeVariant = (index: number, patch: Partial<{ key: string; rollout: string }>) => setVariants(variants.map((variant, at) => (at === index ? { ...variant, ...patch } : variant)));

    async function create(event: Event) {
        event.preventDefault();
        await attempt(async () => {
            let key = flagKey.trim();
            let split: VariantSplit[] = variants.map((variant) => ({ key: variant.key.trim(), rollout_percentage: Number(variant.rollout) }));
            if (flagMode === 'existing') {
                const flag = flags.find((one) => String(one.id) === existing);
                key = flag?.key ?? '';
                split = flag?.filters.multivariate?.variants ?? [];
            }
            const created = await experimentApi.create(project.id, {
                name: name.trim(),
                description: description.trim() || undefined,
                feature_flag_key: key,
                parameters: { feature_flag_variants: split },
                metrics: metrics.map(metricOf),
                stats_config: { method },
            });
            navigate(`/experiments/${created.id}`);
        });
    }

    const known = ['name', 'description', 'feature_flag_key', 'parameters', 'metrics'];
    const unplaced = error && !known.some((attr) => fieldError(error, attr));

    return (
        <main class="page experiments">
            <PageTitle title="New experiment" />
            <form class="panel experiment-form" onSubmit={create} noValidate>
                <Field label="Name" error={fieldError(error, 'name')}>
                    <input name="name" value={name} onInput={(event) => setName(event.currentTarget.value)} />
                </Field>
                <Field label="Hypothesis (optional)" error={fieldError(error, 'description')}>
                    <textarea name="description" rows={2} value={description} onInput={(event) => setDescription(event.currentTarget.value)} />
                </Field>

                <fieldset class="flag-section">
                    <legend>Feature flag</legend>
                    <div class="segmented" role="radiogroup" aria-label="Flag">
                        <label>
                            <input type="radio" name="flag-mode" checked={flagMode === 'new'} onChange={() => setFlagMode('new')} /> A new flag
                        </label>
                        <label>
                            <input type="radio" name="flag-mode" checked={flagMode === 'existing'} onChange={() => setFlagMode('existing')} /> An existing flag
                        </label>
                    </div>
                    {flagMode === 'new' ? (
                        <>
                            <Field label="Flag key" error={fieldError(error, 'feature_flag_key')}>
                                <input name="feature_flag_key" value={flagKey} onInput={(event) => setFlagKey(event.currentTarget.value)} />
                            </Field>
                            <div class="variants">
                                <span class="field-label">Variants (the first is the control)</span>
                                {variants.map((variant, index) => (
                                    <div class="variant" key={index}>
                                        <input aria-label={`Variant ${index + 1} key`} value={variant.key} onInput={(event) => changeVariant(index, { key: event.currentTarget.value })} />
                                        <label class="inline-field">
                                            <input class="percent" inputMode="decimal" aria-label={`Variant ${index + 1} split`} value={variant.rollout} onInput={(event) => changeVariant(index, { rollout: event.currentTarget.value })} />%
                                        </label>
                                        {index > 1 && (
                                            <button type="button" class="link" aria-label={`Remove variant ${index + 1}`} onClick={() => setVariants(variants.filter((_, at) => at !== index))}>
                                                ✕
                                            </button>
                                        )}
                                    </div>
                                ))}
                                <button type="button" class="secondary" onClick={() => setVariants([...variants, { key: `test-${variants.length}`, rollout: '0' }])}>
                                    Add variant
                                </button>
                                {fieldError(error, 'parameters') && (
                                    <p class="form-error" role="alert">
                                        {fieldError(error, 'parameters')}
                                    </p>
                                )}
                            </div>
                        </>
                    ) : (
                        <Field label="Flag (multivariate, first variant control)" error={fieldError(error, 'feature_flag_key')}>
                            <select name="existing_flag" value={existing} onChange={(event) => setExisting(event.currentTarget.value)}>
                                <option value="">Choose a flag</option>
                                {flags.map((flag) => (
                                    <option key={flag.id} value={String(flag.id)}>
                                        {flag.key} ({(flag.filters.multivariate?.variants ?? []).map((variant) => `${variant.key} ${variant.rollout_percentage}%`).join(', ')})
                                    </option>
                                ))}
                            </select>
                        </Field>
                    )}
                </fieldset>

                <fieldset class="flag-section">
                    <legend>Primary metrics</legend>
                    {metrics.map((metric, index) => (
                        <div class="metric-form" key={index} data-metric={index + 1}>
                            <div class="metric-form-row">
                                <input aria-label={`Metric ${index + 1} name`} placeholder="name (optional)" value={metric.name} onInput={(event) => changeMetric(index, { name: event.currentTarget.value })} />
                                <select aria-label={`Metric ${index + 1} type`} value={metric.type} onChange={(event) => changeMetric(index, { type: event.currentTarget.value as MetricForm['type'] })}>
                                    <option value="mean">Mean (per user)</option>
                                    <option value="funnel">Funnel (conversion)</option>
                                </select>
                                {metrics.length > 1 && (
                                    <button type="button" class="link" aria-label={`Remove metric ${index + 1}`} onClick={() => setMetrics(metrics.filter((_, at) => at !== index))}>
                                        ✕
                                    </button>
                                )}
                            </div>
                            {metric.type === 'mean' ? (
                                <div class="metric-form-row">
                                    <input aria-label={`Metric ${index + 1} event`} placeholder="event name" value={metric.event} onInput={(event) => changeMetric(index, { event: event.currentTarget.value })} />
                                    <select aria-label={`Metric ${index + 1} math`} value={metric.math} onChange={(event) => changeMetric(index, { math: event.currentTarget.value })}>
                                        {MATHS.map(([value, label]) => (
                                            <option key={value} value={value}>
                                                {label}
                                            </option>
                                        ))}
                                    </select>
                                    {['sum', 'avg', 'min', 'max'].includes(metric.math) && (
                                        <input aria-label={`Metric ${index + 1} property`} placeholder="property" value={metric.property} onInput={(event) => changeMetric(index, { property: event.currentTarget.value })} />
                                    )}
                                </div>
                            ) : (
                                <textarea
                                    aria-label={`Metric ${index + 1} steps`}
                                    rows={2}
                                    placeholder="event names, one step per line (after the exposure)"
                                    value={metric.steps}
                                    onInput={(event) => changeMetric(index, { steps: event.currentTarget.value })}
                                />
                            )}
                        </div>
                    ))}
                    <button type="button" class="secondary" onClick={() => setMetrics([...metrics, emptyMetric()])}>
                        Add metric
                    </button>
                    {fieldError(error, 'metrics') && (
                        <p class="form-error" role="alert">
                            {fieldError(error, 'metrics')}
                        </p>
                    )}
                </fieldset>

                <Field label="Statistics">
                    <select name="stats_method" value={method} onChange={(event) => setMethod(event.currentTarget.value as 'bayesian' | 'frequentist')}>
                        <option value="bayesian">Bayesian (chance to win)</option>
                        <option value="frequentist">Frequentist (p-value)</option>
                    </select>
                </Field>
                {unplaced && <ErrorText error={error} />}
                <div class="form-actions">
                    <button type="submit" class="primary" disabled={saving}>
                        {saving ? 'Creating…' : 'Create experiment'}
                    </button>
                </div>
            </form>
        </main>
    );
}

// ---------------------------------------------------------------------------------------------
// One experiment

const CONCLUSIONS: [string, string][] = [
    ['', 'No conclusion'],
    ['won', 'Won'],
    ['lost', 'Lost'],
    ['inconclusive', 'Inconclusive'],
    ['stopped_early', 'Stopped early'],
    ['invalid', 'Invalid'],
];

function ExperimentPage({ project, id }: { project: Project; id: string }) {
    const [loaded, reload] = useLoad(() => experimentApi.get(project.id, id), [project.id, id]);
    const { busy, error, run: attempt } = useAction();
    const [dialog, setDialog] = useState<'end' | 'ship' | null>(null);

    async function act(experiment: Experiment, action: string, body?: unknown) {
        await attempt(async () => {
            await experimentApi.action(project.id, experiment.id, action, body);
            setDialog(null);
            reload();
        });
    }

    const time = timeFormatter(project.timezone);
    return (
        <main class="page experiments">
            <Loaded loadable={loaded}>
                {(experiment) => {
                    const split = experiment.parameters?.feature_flag_variants ?? experiment.feature_flag?.filters.multivariate?.variants ?? [];
                    const live = experiment.status === 'running' || experiment.status === 'paused';
                    // After `ship_variant` the flag serves one variant at 100%.
                    const flagVariants = experiment.feature_flag?.filters.multivariate?.variants ?? [];
                    const shipped = experiment.status === 'stopped' ? flagVariants.find((variant) => variant.rollout_percentage === 100)?.key : undefined;
                    return (
                        <>
                            <PageTitle title={experiment.name}>
                                <StatusBadge experiment={experiment} />
                                {experiment.status === 'draft' && (
                                    <button type="button" class="primary" disabled={busy} onClick={() => act(experiment, 'launch')}>
                                        Launch
                                    </button>
                                )}
                                {experiment.status === 'running' && (
                                    <button type="button" class="secondary" disabled={busy} onClick={() => act(experiment, 'pause')}>
                                        Pause
                                    </button>
                                )}
                                {experiment.status === 'paused' && (
                                    <button type="button" class="secondary" disabled={busy} onClick={() => act(experiment, 'resume')}>
                                        Resume
                                    </button>
                                )}
                                {live && (
                                    <button type="button" class="secondary" disabled={busy} onClick={() => setDialog('end')}>
                                        End
                                    </button>
                                )}
                                {experiment.status !== 'draft' && (
                                    <button type="button" class="secondary" disabled={busy} onClick={() => setDialog('ship')}>
                                        Ship a variant
                                    </button>
                                )}
                                {experiment.status === 'stopped' && !experiment.archived && (
                                    <button type="button" class="secondary" disabled={busy} onClick={() => act(experiment, 'archive')}>
                                        Archive
                                    </button>
                                )}
                                {experiment.archived && (
                                    <button type="button" class="secondary" disabled={busy} onClick={() => act(experiment, 'unarchive')}>
                                        Unarchive
                                    </button>
                                )}
                            </PageTitle>
                            {error && <ErrorText error={error} />}
                            <section class="panel experiment-summary">
                                <dl class="facts">
                                    <dt>Flag</dt>
                                    <dd>
                                        {experiment.feature_flag ? (
                                            <Link href={`/feature_flags/${experiment.feature_flag.id}`}>
                                                <code>{experiment.feature_flag_key}</code>
                                            </Link>
                                        ) : (
                                            <code>{experiment.feature_flag_key}</code>
                                        )}
                                        {experiment.feature_flag && <span class="muted"> · {experiment.feature_flag.active ? 'active' : 'inactive'}</span>}
                                    </dd>
                                    <dt>Variants</dt>
                                    <dd class="split">
                                        {split.map((variant) => (
                                            <span key={variant.key} class="badge" data-variant={variant.key}>
                                                {variant.key} {variant.rollout_percentage}%
                                            </span>
                                        ))}
                                    </dd>
                                    {shipped && (
                                        <>
                                            <dt>Shipped</dt>
                                            <dd class="shipped">
                                                <code>{shipped}</code> to everyone the flag releases to
                                            </dd>
                                        </>
                                    )}
                                    <dt>Started</dt>
                                    <dd class="start-date">{experiment.start_date ? time(new Date(experiment.start_date)) : 'Not launched'}</dd>
                                    <dt>Ended</dt>
                                    <dd class="end-date">{experiment.end_date ? time(new Date(experiment.end_date)) : '–'}</dd>
                                    <dt>Statistics</dt>
                                    <dd>{experiment.stats_config?.method === 'frequentist' ? 'Frequentist' : 'Bayesian'}</dd>
                                    {experiment.conclusion && (
                                        <>
                                            <dt>Conclusion</dt>
                                            <dd class="conclusion">
                                                {experiment.conclusion}
                                                {experiment.conclusion_comment ? `: ${experiment.conclusion_comment}` : ''}
                                            </dd>
                                        </>
                                    )}
                                </dl>
                                {experiment.description && <p class="hypothesis">{experiment.description}</p>}
                            </section>
                            <h2 class="results-title">Results</h2>
                            {experiment.start_date ? (
                                <>
                                    {experiment.metrics.map((metric, index) => (
                                        <MetricResults key={metric.uuid ?? index} project={project} experiment={experiment} metric={metric} index={index} />
                                    ))}
                                    {experiment.metrics_secondary.map((metric, index) => (
                                        <MetricResults key={metric.uuid ?? `s${index}`} project={project} experiment={experiment} metric={metric} index={index} secondary />
                                    ))}
                                    {experiment.metrics.length + experiment.metrics_secondary.length === 0 && <p class="muted">This experiment has no metrics.</p>}
                                </>
                            ) : (
                                <>
                                    <p class="muted">Launch the experiment to start collecting exposures. Metrics:</p>
                                    <ul class="metric-list">
                                        {experiment.metrics.map((metric, index) => (
                                            <li key={index}>{metricTitle(metric)}</li>
                                        ))}
                                    </ul>
                                </>
                            )}
                            {dialog && (
                                <ConcludeDialog
                                    ship={dialog === 'ship'}
                                    variants={split.map((variant) => variant.key)}
                                    busy={busy}
                                    error={error}
                                    onClose={() => setDialog(null)}
                                    onConfirm={(body) => act(experiment, dialog === 'ship' ? 'ship_variant' : 'end', body)}
                                />
                            )}
                        </>
                    );
                }}
            </Loaded>
        </main>
    );
}

function ConcludeDialog({ ship, variants, busy, error, onClose, onConfirm }: { ship: boolean; variants: string[]; busy: boolean; error: ApiError | null; onClose: () => void; onConfirm: (body: Record<string, unknown>) => void }) {
    const [variant, setVariant] = useState(variants[1] ?? variants[0] ?? '');
    const [conclusion, setConclusion] = useState('');
    const [comment, setComment] = useState('');
    return (
        <Dialog title={ship ? 'Ship a variant' : 'End the experiment'} onClose={onClose}>
            <form
                onSubmit={(event) => {
                    event.preventDefault();
                    const body: Record<string, unknown> = {};
                    if (ship) body.variant_key = variant;
                    if (conclusion) body.conclusion = conclusion;
                    if (comment.trim()) body.conclusion_comment = comment.trim();
                    onConfirm(body);
                }}
            >
                {ship && (
                    <Field label="Variant to release to everyone" error={fieldError(error, 'variant_key')}>
                        <select name="variant_key" value={variant} onChange={(event) => setVariant(event.currentTarget.value)}>
                            {variants.map((key) => (
                                <option key={key} value={key}>
                                    {key}
                                </option>
                            ))}
                        </select>
                    </Field>
                )}
                <Field label="Conclusion">
                    <select name="conclusion" value={conclusion} onChange={(event) => setConclusion(event.currentTarget.value)}>
                        {CONCLUSIONS.map(([value, label]) => (
                            <option key={value} value={value}>
                                {label}
                            </option>
                        ))}
                    </select>
                </Field>
                <Field label="Comment (optional)">
                    <textarea name="conclusion_comment" rows={2} value={comment} onInput={(event) => setComment(event.currentTarget.value)} />
                </Field>
                {ship && <p class="muted hint">The flag is rewritten to serve this variant to 100% of its users; the experiment ends if it is running.</p>}
                {error && <ErrorText error={error} />}
                <div class="dialog-actions">
                    <button type="button" class="secondary" onClick={onClose}>
                        Cancel
                    </button>
                    <button type="submit" class="primary" disabled={busy}>
                        {ship ? 'Ship variant' : 'End experiment'}
                    </button>
                </div>
            </form>
        </Dialog>
    );
}
