// Feature flags: the project's flags (search, active filter, pages, the active switch), one flag's
// editor (key, name, release conditions on person properties and cohorts, rollout, multivariate
// variants with a JSON payload each), delete, and what a given user gets from the SDKs' own
// evaluation route. Every check on the flag is the API's: its 400 is shown under the field.

import { useState } from 'preact/hooks';
import { type ApiError, type Project, asApiError } from '../api';
import { timeFormatter } from '../format';
import type { PageProps } from '../pages';
import { Link, navigate, setSearchParam } from '../router';
import { ErrorText, Field, Loaded, PageTitle, fieldError, useLoad } from '../ui';
import { ListTable, SearchForm, offsetParam } from '../ui-list';
import { ConfirmDialog, PROPERTY_OPERATORS, useAction } from '../ui-form';
import { type Cohort, type Evaluation, type Flag, type FlagFilters, type PropertyFilter, evaluate, flagApi } from './api';

const LIMIT = 20;

export default function Page({ project, location, rest }: PageProps) {
    if (rest.length === 0) return <FlagList project={project} search={location.search} />;
    if (rest[0] === 'new') return <NewFlag project={project} />;
    return <FlagPage project={project} id={rest[0]!} />;
}

// ---------------------------------------------------------------------------------------------
// The list

function FlagList({ project, search }: { project: Project; search: URLSearchParams }) {
    const text = search.get('search') ?? '';
    const active = search.get('active') ?? '';
    const offset = offsetParam(search);
    const [flags, reload] = useLoad(
        () => flagApi.list(project.id, { limit: LIMIT, offset, search: text || undefined, active: active || undefined }),
        [project.id, text, active, offset],
    );
    const [toggleError, setToggleError] = useState<ApiError | null>(null);
    const [toggling, setToggling] = useState<number | null>(null);

    async function toggle(flag: Flag) {
        setToggleError(null);
        setToggling(flag.id);
        try {
            await flagApi.update(project.id, flag.id, { active: !flag.active });
            reload();
        } catch (error) {
            setToggleError(asApiError(error));
        } finally {
            setToggling(null);
        }
    }

    return (
        <main class="page flags">
            <PageTitle title="Feature flags">
                <button type="button" class="primary" onClick={() => navigate('/feature_flags/new')}>
                    New flag
                </button>
            </PageTitle>
            <SearchForm
                bare
                label="Search flags"
                placeholder="Search by key or name"
                value={text}
                onSearch={(typed) => {
                    setSearchParam('offset', null);
                    setSearchParam('search', typed);
                }}
            >
                <select
                    aria-label="Status"
                    value={active}
                    onChange={(event) => {
                        setSearchParam('offset', null);
                        setSearchParam('active', event.currentTarget.value);
                    }}
                >
                    <option value="">All flags</option>
                    <option value="true">Active</option>
                    <option value="false">Inactive</option>
                </select>
            </SearchForm>
            {toggleError && <ErrorText error={toggleError} />}
            <Loaded loadable={flags}>
                {(page) => (
                    <>
                        <ListTable
                            class="flag-table"
                            shown={page.results.length}
                            empty={<>No flags{text || active ? ' match' : ' yet'}.</>}
                            offset={offset}
                            limit={LIMIT}
                            hasMore={Boolean(page.next)}
                            head={
                                <>
                                    <th>Key</th>
                                    <th>Name</th>
                                    <th>Type</th>
                                    <th>Release</th>
                                    <th>Active</th>
                                </>
                            }
                        >
                            {page.results.map((flag) => (
                                <tr key={flag.id} data-flag-key={flag.key}>
                                    <td>
                                        <Link href={`/feature_flags/${flag.id}`} class="flag-key">
                                            {flag.key}
                                        </Link>
                                    </td>
                                    <td class="flag-name">{flag.name}</td>
                                    <td class="flag-type">{flag.filters.multivariate?.variants?.length ? 'Multivariate' : 'Boolean'}</td>
                                    <td class="flag-release">{releaseSummary(flag.filters)}</td>
                                    <td class="flag-active">
                                        <ActiveSwitch label={`Active ${flag.key}`} checked={flag.active} disabled={toggling === flag.id} onChange={() => toggle(flag)} />
                                    </td>
                                </tr>
                            ))}
                        </ListTable>
                    </>
                )}
            </Loaded>
        </main>
    );
}

function releaseSummary(filters: FlagFilters): string {
    const groups = filters.groups ?? [];
    if (groups.length === 0) return 'Nobody';
    return groups
        .map((group) => {
            const share = group.rollout_percentage === null || group.rollout_percentage === undefined ? 100 : group.rollout_percentage;
            const who = group.properties?.length ? `${group.properties.length} condition${group.properties.length > 1 ? 's' : ''}` : 'everyone';
            return `${share}% of ${who}`;
        })
        .join('; ');
}

function ActiveSwitch({ label, checked, onChange, disabled }: { label: string; checked: boolean; onChange: () => void; disabled?: boolean }) {
    return (
        <label class="switch">
            <input type="checkbox" role="switch" aria-label={label} checked={checked} disabled={disabled} onChange={onChange} />
            <span class="switch-text">{checked ? 'On' : 'Off'}</span>
        </label>
    );
}

// ---------------------------------------------------------------------------------------------
// The editor's state: text fields as typed; turned into the API's `filters` on save.

interface ConditionForm {
    kind: 'person' | 'cohort';
    key: string;
    operator: string;
    value: string;
    cohort: string;
}

interface GroupForm {
    conditions: ConditionForm[];
    rollout: string;
}

interface VariantForm {
    key: string;
    rollout: string;
    payload: string;
}

interface FlagForm {
    key: string;
    name: string;
    active: boolean;
    multivariate: boolean;
    variants: VariantForm[];
    payload: string;
    groups: GroupForm[];
}

const emptyCondition = (): ConditionForm => ({ kind: 'person', key: '', operator: 'exact', value: '', cohort: '' });

function payloadText(value: unknown): string {
    if (value === undefined || value === null) return '';
    return typeof value === 'string' ? value : JSON.stringify(value);
}

function formOf(flag: Flag | null): FlagForm {
    if (!flag) {
        return {
            key: '',
            name: '',
            active: true,
            multivariate: false,
            variants: [
                { key: 'control', rollout: '50', payload: '' },
                { key: 'test', rollout: '50', payload: '' },
            ],
            payload: '',
            groups: [{ conditions: [], rollout: '100' }],
        };
    }
    const filters = flag.filters ?? { groups: [] };
    const payloads = filters.payloads ?? {};
    const variants = filters.multivariate?.variants ?? [];
    return {
        key: flag.key,
        name: flag.name ?? '',
        active: flag.active,
        multivariate: variants.length > 0,
        variants: variants.length
            ? variants.map((variant) => ({ key: variant.key, rollout: String(variant.rollout_percentage), payload: payloadText(payloads[variant.key]) }))
            : formOf(null).variants,
        payload: payloadText(payloads.true),
        groups: (filters.groups ?? []).map((group) => ({
            rollout: group.rollout_percentage === null || group.rollout_percentage === undefined ? '' : String(group.rollout_percentage),
            conditions: (group.properties ?? []).map((property) =>
                property.type === 'cohort'
                    ? { ...emptyCondition(), kind: 'cohort' as const, cohort: String(property.value), operator: property.operator === 'not_in' ? 'not_in' : 'in' }
                    : {
                          ...emptyCondition(),
                          key: property.key,
                          operator: property.operator ?? 'exact',
                          value: Array.isArray(property.value) ? property.value.join(', ') : property.value === null || property.value === undefined ? '' : String(property.value),
                      },
            ),
        })),
    };
}

function propertyValue(condition: ConditionForm): unknown {
    const text = condition.value.trim();
    switch (condition.operator) {
        case 'exact':
        case 'is_not':
            return text.split(',').map((part) => part.trim()).filter(Boolean);
        case 'is_set':
        case 'is_not_set':
            return condition.operator;
        case 'gt':
        case 'gte':
        case 'lt':
        case 'lte':
            return text !== '' && Number.isFinite(Number(text)) ? Number(text) : text;
        default:
            return text;
    }
}

function number(text: string): number | string {
    return text.trim() !== '' && Number.isFinite(Number(text)) ? Number(text) : text;
}

function filtersOf(form: FlagForm): FlagFilters {
    const groups = form.groups.map((group) => ({
        rollout_percentage: group.rollout.trim() === '' ? null : (number(group.rollout) as number),
        properties: group.conditions.map(
            (condition): PropertyFilter =>
                condition.kind === 'cohort'
                    ? { key: 'id', type: 'cohort', operator: condition.operator, value: Number(condition.cohort) }
                    : { key: condition.key.trim(), type: 'person', operator: condition.operator, value: propertyValue(condition) },
        ),
    }));
    const payloads: Record<string, unknown> = {};
    if (form.multivariate) {
        for (const variant of form.variants) if (variant.payload.trim()) payloads[variant.key.trim()] = variant.payload.trim();
    } else if (form.payload.trim()) payloads.true = form.payload.trim();
    return {
        groups,
        multivariate: form.multivariate
            ? { variants: form.variants.map((variant) => ({ key: variant.key.trim(), rollout_percentage: number(variant.rollout) as number })) }
            : null,
        payloads,
    };
}

/** Payloads must be JSON: checked here so the message sits under the payload typed. */
function payloadProblems(form: FlagForm): Record<string, string> {
    const problems: Record<string, string> = {};
    const check = (name: string, text: string) => {
        if (!text.trim()) return;
        try {
            JSON.parse(text);
        } catch {
            problems[name] = 'The payload must be valid JSON.';
        }
    };
    if (form.multivariate) form.variants.forEach((variant, index) => check(`variant-${index}`, variant.payload));
    else check('true', form.payload);
    return problems;
}

// ---------------------------------------------------------------------------------------------
// New flag, and a flag's own page

function NewFlag({ project }: { project: Project }) {
    return (
        <main class="page flags">
            <PageTitle title="New feature flag" />
            <FlagEditor project={project} flag={null} onSaved={(flag) => navigate(`/feature_flags/${flag.id}`)} />
        </main>
    );
}

function FlagPage({ project, id }: { project: Project; id: string }) {
    const [flag, reload] = useLoad(() => flagApi.get(project.id, id), [project.id, id]);
    const [deleting, setDeleting] = useState(false);
    const { busy, error, run: attempt } = useAction();

    async function write(current: Flag, body: Record<string, unknown>, after?: () => void) {
        await attempt(async () => {
            await flagApi.update(project.id, current.id, body);
            if (after) after();
            else reload();
        });
    }

    return (
        <main class="page flags">
            <Loaded loadable={flag}>
                {(current) => (
                    <>
                        <PageTitle title={current.key}>
                            <ActiveSwitch label="Active" checked={current.active} disabled={busy} onChange={() => write(current, { active: !current.active })} />
                            <button type="button" class="secondary danger" onClick={() => setDeleting(true)}>
                                Delete
                            </button>
                        </PageTitle>
                        <p class="muted flag-meta">
                            <Link href="/feature_flags">All flags</Link>
                            {' · '}
                            {current.deleted ? 'Deleted' : current.active ? 'Active' : 'Inactive'} · version {current.version}
                            {current.created_by?.email ? ` · created by ${current.created_by.email}` : ''}
                            {' · '}
                            {timeFormatter(project.timezone)(new Date(current.created_at))}
                        </p>
                        {error && <ErrorText error={error} />}
                        <div class="flag-columns">
                            {/* Kept across reloads (a toggle, a save): what is typed stays, the version is the newest. */}
                            <FlagEditor key={current.id} project={project} flag={current} onSaved={() => reload()} />
                            <UserCheck project={project} flag={current} />
                        </div>
                        {deleting && (
                            <ConfirmDialog
                                title="Delete this flag?"
                                confirm="Delete flag"
                                cancelFirst
                                busy={busy}
                                onConfirm={() => write(current, { deleted: true }, () => navigate('/feature_flags'))}
                                onCancel={() => setDeleting(false)}
                            >
                                <code>{current.key}</code> stops being served to SDKs, which fall back to their default.
                            </ConfirmDialog>
                        )}
                    </>
                )}
            </Loaded>
        </main>
    );
}

function FlagEditor({ project, flag, onSaved }: { project: Project; flag: Flag | null; onSaved: (flag: Flag) => void }) {
    const [form, setForm] = useState<FlagForm>(() => formOf(flag));
    const [error, setError] = useState<ApiError | null>(null);
    const [problems, setProblems] = useState<Record<string, string>>({});
    const [saving, setSaving] = useState(false);
    const [saved, setSaved] = useState(false);
    const [cohorts] = useLoad(() => flagApi.cohorts(project.id).then((page) => page.results), [project.id]);
    const cohortList: Cohort[] = cohorts.state === 'done' ? cohorts.value : [];

    const change = (patch: Partial<FlagForm>) => {
        setSaved(false);
        setForm((previous) => ({ ...previous, ...patch }));
    };
    const changeGroup = (index: number, patch: Partial<GroupForm>) =>
        change({ groups: form.groups.map((group, at) => (at === index ? { ...group, ...patch } : group)) });
    const changeCondition = (groupIndex: number, index: number, patch: Partial<ConditionForm>) =>
        changeGroup(groupIndex, { conditions: form.groups[groupIndex]!.conditions.map((condition, at) => (at === index ? { ...condition, ...patch } : condition)) });
    const changeVariant = (index: number, patch: Partial<VariantForm>) =>
        change({ variants: form.variants.map((variant, at) => (at === index ? { ...variant, ...patch } : variant)) });

    async function save(event: Event) {
        event.preventDefault();
        setError(null);
        const found = payloadProblems(form);
        setProblems(found);
        if (Object.keys(found).length) return;
        setSaving(true);
        try {
            const body: Record<string, unknown> = { key: form.key.trim(), name: form.name, filters: filtersOf(form) };
            const result = flag ? await flagApi.update(project.id, flag.id, { ...body, version: flag.version }) : await flagApi.create(project.id, { ...body, active: form.active });
            setSaved(true);
            onSaved(result);
        } catch (thrown) {
            setError(asApiError(thrown));
        } finally {
            setSaving(false);
        }
    }

    // The API names `filters` for any problem in them: shown under the variants when it is about
    // them, else under the release conditions.
    const filtersError = fieldError(error, 'filters');
    const aboutVariants = filtersError !== null && /variant|payload/i.test(filtersError);
    const unplaced = error && !fieldError(error, 'key') && !fieldError(error, 'name') && !filtersError;

    return (
        <form class="panel flag-editor" onSubmit={save} noValidate>
            <Field label="Key" error={fieldError(error, 'key')} hint="What the code asks for: letters, numbers, - and _.">
                <input name="key" value={form.key} required onInput={(event) => change({ key: event.currentTarget.value })} />
            </Field>
            <Field label="Description" error={fieldError(error, 'name')}>
                <textarea name="name" rows={2} value={form.name} onInput={(event) => change({ name: event.currentTarget.value })} />
            </Field>
            {!flag && (
                <label class="check">
                    <input type="checkbox" checked={form.active} onChange={(event) => change({ active: event.currentTarget.checked })} /> Active when created
                </label>
            )}

            <fieldset class="flag-section">
                <legend>Release conditions</legend>
                <p class="muted hint">Condition sets are tried in order; a user matching every condition of a set gets the flag at its rollout.</p>
                {form.groups.map((group, groupIndex) => (
                    <div class="condition-group" key={groupIndex} data-group={groupIndex + 1}>
                        <div class="condition-group-head">
                            <strong>Set {groupIndex + 1}</strong>
                            <button type="button" class="link" onClick={() => change({ groups: form.groups.filter((_, at) => at !== groupIndex) })}>
                                Remove set
                            </button>
                        </div>
                        {group.conditions.length === 0 && <p class="muted">Everyone (no conditions).</p>}
                        {group.conditions.map((condition, index) => {
                            const name = `Set ${groupIndex + 1} condition ${index + 1}`;
                            return (
                                <div class="condition" key={index}>
                                    <select aria-label={`${name} type`} value={condition.kind} onChange={(event) => changeCondition(groupIndex, index, { kind: event.currentTarget.value as 'person' | 'cohort', operator: event.currentTarget.value === 'cohort' ? 'in' : 'exact' })}>
                                        <option value="person">Person property</option>
                                        <option value="cohort">Cohort</option>
                                    </select>
                                    {condition.kind === 'person' ? (
                                        <>
                                            <input aria-label={`${name} property`} placeholder="property" value={condition.key} onInput={(event) => changeCondition(groupIndex, index, { key: event.currentTarget.value })} />
                                            <select aria-label={`${name} operator`} value={condition.operator} onChange={(event) => changeCondition(groupIndex, index, { operator: event.currentTarget.value })}>
                                                {PROPERTY_OPERATORS.map(([value, label]) => (
                                                    <option key={value} value={value}>
                                                        {label}
                                                    </option>
                                                ))}
                                            </select>
                                            {condition.operator !== 'is_set' && condition.operator !== 'is_not_set' && (
                                                <input
                                                    aria-label={`${name} value`}
                                                    placeholder={condition.operator === 'exact' || condition.operator === 'is_not' ? 'values, comma separated' : 'value'}
                                                    value={condition.value}
                                                    onInput={(event) => changeCondition(groupIndex, index, { value: event.currentTarget.value })}
                                                />
                                            )}
                                        </>
                                    ) : (
                                        <>
                                            <select aria-label={`${name} operator`} value={condition.operator} onChange={(event) => changeCondition(groupIndex, index, { operator: event.currentTarget.value })}>
                                                <option value="in">in</option>
                                                <option value="not_in">not in</option>
                                            </select>
                                            <select aria-label={`${name} cohort`} value={condition.cohort} onChange={(event) => changeCondition(groupIndex, index, { cohort: event.currentTarget.value })}>
                                                <option value="">Choose a cohort</option>
                                                {cohortList.map((cohort) => (
                                                    <option key={cohort.id} value={String(cohort.id)}>
                                                        {cohort.name || `Cohort ${cohort.id}`}
                                                    </option>
                                                ))}
                                                {condition.cohort && !cohortList.some((cohort) => String(cohort.id) === condition.cohort) && <option value={condition.cohort}>Cohort {condition.cohort}</option>}
                                            </select>
                                        </>
                                    )}
                                    <button type="button" class="link" aria-label={`Remove ${name}`} onClick={() => changeGroup(groupIndex, { conditions: group.conditions.filter((_, at) => at !== index) })}>
                                        ✕
                                    </button>
                                </div>
                            );
                        })}
                        <div class="condition-group-foot">
                            <button type="button" class="secondary" onClick={() => changeGroup(groupIndex, { conditions: [...group.conditions, emptyCondition()] })}>
                                Add condition
                            </button>
                            <label class="inline-field">
                                Roll out to
                                <input class="percent" inputMode="decimal" aria-label={`Set ${groupIndex + 1} rollout percentage`} value={group.rollout} onInput={(event) => changeGroup(groupIndex, { rollout: event.currentTarget.value })} />%
                            </label>
                        </div>
                    </div>
                ))}
                <button type="button" class="secondary" onClick={() => change({ groups: [...form.groups, { conditions: [], rollout: '100' }] })}>
                    Add condition set
                </button>
                {filtersError && !aboutVariants && (
                    <p class="form-error" role="alert">
                        {filtersError}
                    </p>
                )}
            </fieldset>

            <fieldset class="flag-section">
                <legend>Served value</legend>
                <div class="segmented" role="radiogroup" aria-label="Flag type">
                    <label>
                        <input type="radio" name="flag-type" checked={!form.multivariate} onChange={() => change({ multivariate: false })} /> Boolean
                    </label>
                    <label>
                        <input type="radio" name="flag-type" checked={form.multivariate} onChange={() => change({ multivariate: true })} /> Multiple variants
                    </label>
                </div>
                {form.multivariate ? (
                    <>
                        <div class="variants">
                            {form.variants.map((variant, index) => (
                                <div class="variant" key={index}>
                                    <input aria-label={`Variant ${index + 1} key`} placeholder="key" value={variant.key} onInput={(event) => changeVariant(index, { key: event.currentTarget.value })} />
                                    <label class="inline-field">
                                        <input class="percent" inputMode="decimal" aria-label={`Variant ${index + 1} rollout percentage`} value={variant.rollout} onInput={(event) => changeVariant(index, { rollout: event.currentTarget.value })} />%
                                    </label>
                                    <textarea aria-label={`Variant ${index + 1} payload`} rows={1} placeholder='payload (JSON), e.g. {"color": "blue"}' value={variant.payload} onInput={(event) => changeVariant(index, { payload: event.currentTarget.value })} />
                                    <button type="button" class="link" aria-label={`Remove variant ${index + 1}`} onClick={() => change({ variants: form.variants.filter((_, at) => at !== index) })}>
                                        ✕
                                    </button>
                                    {problems[`variant-${index}`] && (
                                        <span class="form-error variant-error" role="alert">
                                            {problems[`variant-${index}`]}
                                        </span>
                                    )}
                                </div>
                            ))}
                        </div>
                        <button type="button" class="secondary" onClick={() => change({ variants: [...form.variants, { key: '', rollout: '0', payload: '' }] })}>
                            Add variant
                        </button>
                        {aboutVariants && (
                            <p class="form-error" role="alert" id="variants-error">
                                {filtersError}
                            </p>
                        )}
                    </>
                ) : (
                    <Field label="Payload when true (JSON)" error={problems.true ?? (aboutVariants ? filtersError : null)}>
                        <textarea rows={2} value={form.payload} onInput={(event) => change({ payload: event.currentTarget.value })} />
                    </Field>
                )}
            </fieldset>

            {unplaced && <ErrorText error={error} />}
            <div class="form-actions">
                <button type="submit" class="primary" disabled={saving}>
                    {saving ? 'Saving…' : flag ? 'Save' : 'Create flag'}
                </button>
                {saved && <span class="muted" role="status">Saved.</span>}
            </div>
        </form>
    );
}

// ---------------------------------------------------------------------------------------------
// What a given user gets

function UserCheck({ project, flag }: { project: Project; flag: Flag }) {
    const [distinctId, setDistinctId] = useState('');
    const [properties, setProperties] = useState('');
    const [answer, setAnswer] = useState<{ distinctId: string; evaluation: Evaluation | null } | null>(null);
    const [error, setError] = useState<ApiError | null>(null);
    const [propertiesError, setPropertiesError] = useState<string | null>(null);
    const [busy, setBusy] = useState(false);

    async function check(event: Event) {
        event.preventDefault();
        setError(null);
        setPropertiesError(null);
        let personProperties: Record<string, unknown> = {};
        if (properties.trim()) {
            try {
                const parsed = JSON.parse(properties);
                if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error('not an object');
                personProperties = parsed as Record<string, unknown>;
            } catch {
                setPropertiesError('Person properties must be a JSON object, e.g. {"plan": "pro"}.');
                return;
            }
        }
        setBusy(true);
        try {
            const id = distinctId.trim();
            setAnswer({ distinctId: id, evaluation: await evaluate(project.api_token, flag.key, id, personProperties) });
        } catch (thrown) {
            setError(asApiError(thrown));
        } finally {
            setBusy(false);
        }
    }

    const evaluation = answer?.evaluation;
    const value = evaluation ? (evaluation.enabled ? (evaluation.variant ?? 'true') : 'false') : null;
    const payload = evaluation?.metadata?.payload;
    return (
        <section class="panel user-check" aria-labelledby="user-check-title">
            <h2 id="user-check-title">What does a user get?</h2>
            <p class="muted hint">Asks /flags, the route the SDKs call, with the project token, as posthog-js would.</p>
            <form onSubmit={check}>
                <Field label="Distinct ID">
                    <input name="distinct_id" value={distinctId} required onInput={(event) => setDistinctId(event.currentTarget.value)} />
                </Field>
                <Field label="Person properties (JSON, optional)" error={propertiesError}>
                    <textarea name="person_properties" rows={2} placeholder='{"plan": "pro"}' value={properties} onInput={(event) => setProperties(event.currentTarget.value)} />
                </Field>
                <button type="submit" class="primary" disabled={busy || !distinctId.trim()}>
                    Evaluate
                </button>
            </form>
            {error && <ErrorText error={error} />}
            {answer && (
                <dl class="evaluation" aria-live="polite">
                    <dt>Distinct ID</dt>
                    <dd class="evaluation-id">{answer.distinctId}</dd>
                    <dt>Value</dt>
                    <dd class="evaluation-value">
                        {value === null ? <span class="muted">Not served (inactive or deleted)</span> : <code>{value}</code>}
                    </dd>
                    <dt>Payload</dt>
                    <dd class="evaluation-payload">{payload === undefined || payload === null ? <span class="muted">none</span> : <code>{payloadText(payload)}</code>}</dd>
                    {evaluation?.reason && (
                        <>
                            <dt>Why</dt>
                            <dd class="evaluation-reason">{evaluation.reason.description ?? evaluation.reason.code}</dd>
                        </>
                    )}
                </dl>
            )}
        </section>
    );
}
