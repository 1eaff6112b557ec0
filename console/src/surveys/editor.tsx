// Creating and editing a survey: its questions, targeting and appearance, with the popover drawn
// beside the form as it changes. The API validates; its 400s are shown at the field they name.

import { useState } from 'preact/hooks';
import { type ApiError, type Paged, asApiError, http, projectPath, withParams } from '../api';
import { navigate } from '../router';
import { ErrorText, Field, Loaded, PageTitle, fieldError, useLoad } from '../ui';
import { type Appearance, type PropertyFilter, QUESTION_TYPES, type Question, type QuestionType, type Survey, surveysPath } from './model';
import { SurveyPreview } from './preview';

/** The attributes whose errors are shown at their field. */
const FIELD_ATTRS = ['name', 'type', 'questions', 'conditions', 'linked_flag_id', 'targeting_flag_filters', 'appearance'];

interface Draft {
    name: string;
    description: string;
    type: 'popover' | 'api';
    questions: Question[];
    url: string;
    linkedFlagId: string;
    properties: { key: string; value: string }[];
    appearance: Appearance;
}

function emptyQuestion(type: QuestionType): Question {
    switch (type) {
        case 'rating':
            return { type, question: '', scale: 5, display: 'number', lowerBoundLabel: 'Unlikely', upperBoundLabel: 'Very likely' };
        case 'single_choice':
        case 'multiple_choice':
            return { type, question: '', choices: ['', ''] };
        case 'link':
            return { type, question: '', link: 'https://' };
        default:
            return { type, question: '' };
    }
}

function draftOf(survey: Survey | null): Draft {
    if (!survey)
        return {
            name: '',
            description: '',
            type: 'popover',
            questions: [emptyQuestion('open')],
            url: '',
            linkedFlagId: '',
            properties: [],
            appearance: { backgroundColor: '#eeeded', submitButtonColor: '#000000', submitButtonTextColor: '#ffffff', position: 'right', placeholder: 'Start typing…' },
        };
    const groups = survey.targeting_flag?.filters?.groups ?? [];
    const properties = groups.flatMap((group) => group.properties ?? []).map((p: PropertyFilter) => ({ key: p.key, value: Array.isArray(p.value) ? p.value.join(',') : String(p.value ?? '') }));
    return {
        name: survey.name,
        description: survey.description ?? '',
        type: survey.type === 'api' ? 'api' : 'popover',
        questions: survey.questions.map((q) => ({ ...q })),
        url: survey.conditions?.url ?? '',
        linkedFlagId: survey.linked_flag_id ? String(survey.linked_flag_id) : '',
        properties,
        appearance: { ...(survey.appearance ?? {}) },
    };
}

/** The request body for `draft` (for an edit, what turns targeting off too). */
function bodyOf(draft: Draft, editing: Survey | null): Record<string, unknown> {
    const conditions: Record<string, unknown> = { ...(editing?.conditions ?? {}) };
    if (draft.url.trim()) {
        conditions.url = draft.url.trim();
        conditions.urlMatchType = 'icontains';
    } else {
        delete conditions.url;
        delete conditions.urlMatchType;
    }
    const properties = draft.properties.filter((p) => p.key.trim());
    const body: Record<string, unknown> = {
        name: draft.name,
        description: draft.description,
        type: draft.type,
        questions: draft.questions,
        conditions: Object.keys(conditions).length ? conditions : null,
        appearance: draft.appearance,
        linked_flag_id: draft.linkedFlagId ? Number(draft.linkedFlagId) : null,
    };
    if (properties.length) {
        body.targeting_flag_filters = {
            groups: [
                {
                    properties: properties.map((p) => ({ key: p.key.trim(), value: p.value, operator: 'exact', type: 'person' })),
                    rollout_percentage: 100,
                },
            ],
        };
    } else if (editing?.targeting_flag) {
        body.remove_targeting_flag = true;
    }
    return body;
}

function QuestionEditor({ question, index, count, error, onChange, onMove, onRemove }: { question: Question; index: number; count: number; error: ApiError | null; onChange: (q: Question) => void; onMove: (by: number) => void; onRemove: () => void }) {
    const set = (patch: Partial<Question>) => onChange({ ...question, ...patch });
    const choices = question.choices ?? [];
    return (
        <fieldset class="sv-question-editor" data-index={index}>
            <legend>Question {index + 1}</legend>
            <div class="sv-row">
                <Field label="Type">
                    <select value={question.type} onChange={(e) => onChange({ ...emptyQuestion(e.currentTarget.value as QuestionType), question: question.question, ...(question.id ? { id: question.id } : {}) })}>
                        {QUESTION_TYPES.map((t) => (
                            <option key={t.value} value={t.value}>
                                {t.label}
                            </option>
                        ))}
                    </select>
                </Field>
                <label class="sv-check">
                    <input type="checkbox" checked={!!question.optional} onChange={(e) => set({ optional: e.currentTarget.checked })} /> Optional
                </label>
            </div>
            <Field label="Question text" error={index === 0 ? fieldError(error, 'questions') : null}>
                <input value={question.question} onInput={(e) => set({ question: e.currentTarget.value })} />
            </Field>
            <Field label="Description">
                <input value={question.description ?? ''} onInput={(e) => set({ description: e.currentTarget.value })} />
            </Field>
            {question.type === 'rating' && (
                <div class="sv-row">
                    <Field label="Display">
                        <select value={question.display ?? 'number'} onChange={(e) => set({ display: e.currentTarget.value as 'number' | 'emoji', scale: e.currentTarget.value === 'emoji' ? 5 : (question.scale ?? 5) })}>
                            <option value="number">Numbers</option>
                            <option value="emoji">Emoji</option>
                        </select>
                    </Field>
                    <Field label="Scale">
                        <select value={String(question.scale ?? 5)} onChange={(e) => set({ scale: Number(e.currentTarget.value) })}>
                            {(question.display === 'emoji' ? [3, 5] : [5, 7, 10]).map((n) => (
                                <option key={n} value={n}>
                                    {question.display !== 'emoji' && n === 10 ? '0 – 10' : `1 – ${n}`}
                                </option>
                            ))}
                        </select>
                    </Field>
                    <Field label="Lower label">
                        <input value={question.lowerBoundLabel ?? ''} onInput={(e) => set({ lowerBoundLabel: e.currentTarget.value })} />
                    </Field>
                    <Field label="Upper label">
                        <input value={question.upperBoundLabel ?? ''} onInput={(e) => set({ upperBoundLabel: e.currentTarget.value })} />
                    </Field>
                </div>
            )}
            {(question.type === 'single_choice' || question.type === 'multiple_choice') && (
                <div class="sv-choices-editor">
                    <span class="field-label">Choices</span>
                    {choices.map((choice, i) => (
                        <div class="sv-choice-row" key={i}>
                            <input aria-label={`Choice ${i + 1}`} value={choice} onInput={(e) => set({ choices: choices.map((c, j) => (j === i ? e.currentTarget.value : c)) })} />
                            <button type="button" class="link" aria-label={`Remove choice ${i + 1}`} onClick={() => set({ choices: choices.filter((_, j) => j !== i) })}>
                                Remove
                            </button>
                        </div>
                    ))}
                    <button type="button" class="secondary" onClick={() => set({ choices: [...choices, ''] })}>
                        Add choice
                    </button>
                </div>
            )}
            {question.type === 'link' && (
                <Field label="Link (https or mailto)">
                    <input value={question.link ?? ''} onInput={(e) => set({ link: e.currentTarget.value })} />
                </Field>
            )}
            <Field label="Button text">
                <input value={question.buttonText ?? ''} placeholder={question.type === 'link' ? 'Go' : 'Submit'} onInput={(e) => set({ buttonText: e.currentTarget.value })} />
            </Field>
            <div class="sv-row">
                <button type="button" class="secondary" disabled={index === 0} onClick={() => onMove(-1)}>
                    Move up
                </button>
                <button type="button" class="secondary" disabled={index === count - 1} onClick={() => onMove(1)}>
                    Move down
                </button>
                <button type="button" class="link" disabled={count === 1} onClick={onRemove}>
                    Remove question
                </button>
            </div>
        </fieldset>
    );
}

function Form({ projectId, editing }: { projectId: number; editing: Survey | null }) {
    const [draft, setDraft] = useState<Draft>(() => draftOf(editing));
    const [error, setError] = useState<ApiError | null>(null);
    const [saving, setSaving] = useState(false);
    const [flags] = useLoad(() => http.get<Paged<{ id: number; key: string }>>(withParams(projectPath(projectId, 'feature_flags/'), { limit: 200 })), [projectId]);
    const set = (patch: Partial<Draft>) => setDraft((d) => ({ ...d, ...patch }));
    const setQuestion = (i: number, q: Question) => set({ questions: draft.questions.map((old, j) => (j === i ? q : old)) });
    const look = (patch: Partial<Appearance>) => set({ appearance: { ...draft.appearance, ...patch } });

    async function save(event: Event) {
        event.preventDefault();
        setSaving(true);
        setError(null);
        try {
            const body = bodyOf(draft, editing);
            const saved = editing
                ? await http.patch<Survey>(surveysPath(projectId, `${editing.id}/`), body)
                : await http.post<Survey>(surveysPath(projectId), body);
            navigate(`/surveys/${saved.id}`);
        } catch (thrown) {
            setError(asApiError(thrown));
            setSaving(false);
        }
    }

    return (
        <form class="sv-editor" onSubmit={save} noValidate>
            <div class="sv-form">
                <section class="panel">
                    <h2>Survey</h2>
                    <Field label="Name" error={fieldError(error, 'name')}>
                        <input value={draft.name} required onInput={(e) => set({ name: e.currentTarget.value })} />
                    </Field>
                    <Field label="Description">
                        <input value={draft.description} onInput={(e) => set({ description: e.currentTarget.value })} />
                    </Field>
                    <Field label="Presentation" error={fieldError(error, 'type')}>
                        <select value={draft.type} onChange={(e) => set({ type: e.currentTarget.value as 'popover' | 'api' })}>
                            <option value="popover">Popover (posthog-js shows it)</option>
                            <option value="api">API (your code shows it)</option>
                        </select>
                    </Field>
                </section>
                <section class="panel">
                    <h2>Questions</h2>
                    {draft.questions.map((question, i) => (
                        <QuestionEditor
                            key={i}
                            question={question}
                            index={i}
                            count={draft.questions.length}
                            error={error}
                            onChange={(q) => setQuestion(i, q)}
                            onMove={(by) => {
                                const next = [...draft.questions];
                                const [moved] = next.splice(i, 1);
                                next.splice(i + by, 0, moved as Question);
                                set({ questions: next });
                            }}
                            onRemove={() => set({ questions: draft.questions.filter((_, j) => j !== i) })}
                        />
                    ))}
                    <div class="sv-row">
                        {QUESTION_TYPES.map((t) => (
                            <button key={t.value} type="button" class="secondary" onClick={() => set({ questions: [...draft.questions, emptyQuestion(t.value)] })}>
                                Add {t.label.toLowerCase()}
                            </button>
                        ))}
                    </div>
                </section>
                <section class="panel">
                    <h2>Targeting</h2>
                    <Field label="URL contains" error={fieldError(error, 'conditions')} hint="Shown only on pages whose address contains this text.">
                        <input value={draft.url} onInput={(e) => set({ url: e.currentTarget.value })} />
                    </Field>
                    <Field label="Linked feature flag" error={fieldError(error, 'linked_flag_id')} hint="Shown only to persons the flag is on for.">
                        <select value={draft.linkedFlagId} onChange={(e) => set({ linkedFlagId: e.currentTarget.value })}>
                            <option value="">None</option>
                            {flags.state === 'done' &&
                                flags.value.results.map((flag) => (
                                    <option key={flag.id} value={String(flag.id)}>
                                        {flag.key}
                                    </option>
                                ))}
                        </select>
                    </Field>
                    <div class="sv-properties">
                        <span class="field-label">Person properties (all must match)</span>
                        {fieldError(error, 'targeting_flag_filters') && <p class="form-error">{fieldError(error, 'targeting_flag_filters')}</p>}
                        {draft.properties.map((p, i) => (
                            <div class="sv-choice-row" key={i}>
                                <input aria-label={`Property ${i + 1} name`} placeholder="email" value={p.key} onInput={(e) => set({ properties: draft.properties.map((q, j) => (j === i ? { ...q, key: e.currentTarget.value } : q)) })} />
                                <span class="muted">equals</span>
                                <input aria-label={`Property ${i + 1} value`} value={p.value} onInput={(e) => set({ properties: draft.properties.map((q, j) => (j === i ? { ...q, value: e.currentTarget.value } : q)) })} />
                                <button type="button" class="link" onClick={() => set({ properties: draft.properties.filter((_, j) => j !== i) })}>
                                    Remove
                                </button>
                            </div>
                        ))}
                        <button type="button" class="secondary" onClick={() => set({ properties: [...draft.properties, { key: '', value: '' }] })}>
                            Add person property
                        </button>
                    </div>
                </section>
                <section class="panel">
                    <h2>Appearance</h2>
                    {fieldError(error, 'appearance') && <p class="form-error">{fieldError(error, 'appearance')}</p>}
                    <div class="sv-colors">
                        {(
                            [
                                ['backgroundColor', 'Background'],
                                ['borderColor', 'Border'],
                                ['textColor', 'Text'],
                                ['submitButtonColor', 'Button'],
                                ['submitButtonTextColor', 'Button text'],
                                ['ratingButtonColor', 'Rating buttons'],
                            ] as const
                        ).map(([key, label]) => (
                            <Field key={key} label={label}>
                                <input type="color" value={String(draft.appearance[key] ?? '#ffffff')} onInput={(e) => look({ [key]: e.currentTarget.value })} />
                            </Field>
                        ))}
                    </div>
                    <div class="sv-row">
                        <Field label="Position">
                            <select value={String(draft.appearance.position ?? 'right')} onChange={(e) => look({ position: e.currentTarget.value })}>
                                <option value="left">Left</option>
                                <option value="center">Center</option>
                                <option value="right">Right</option>
                            </select>
                        </Field>
                        <Field label="Placeholder">
                            <input value={String(draft.appearance.placeholder ?? '')} onInput={(e) => look({ placeholder: e.currentTarget.value })} />
                        </Field>
                    </div>
                    <label class="sv-check">
                        <input type="checkbox" checked={draft.appearance.displayThankYouMessage !== false} onChange={(e) => look({ displayThankYouMessage: e.currentTarget.checked })} /> Thank the person after they answer
                    </label>
                    <Field label="Thank-you header">
                        <input value={String(draft.appearance.thankYouMessageHeader ?? '')} placeholder="Thank you for your feedback!" onInput={(e) => look({ thankYouMessageHeader: e.currentTarget.value })} />
                    </Field>
                </section>
                {error && !FIELD_ATTRS.some((attr) => fieldError(error, attr)) && <ErrorText error={error} />}
                {error && FIELD_ATTRS.some((attr) => fieldError(error, attr)) && <p class="form-error">The survey was not saved: check the field marked above.</p>}
                <div class="sv-row">
                    <button type="submit" class="primary" disabled={saving}>
                        {editing ? 'Save survey' : 'Create survey'}
                    </button>
                    <button type="button" class="secondary" onClick={() => navigate(editing ? `/surveys/${editing.id}` : '/surveys')}>
                        Cancel
                    </button>
                </div>
            </div>
            <aside class="sv-side panel">
                <h2>Preview</h2>
                <SurveyPreview questions={draft.questions} appearance={draft.appearance} />
            </aside>
        </form>
    );
}

export function SurveyEditor({ projectId, id }: { projectId: number; id: string | null }) {
    const [survey] = useLoad(() => (id ? http.get<Survey>(surveysPath(projectId, `${id}/`)) : Promise.resolve(null)), [projectId, id]);
    return (
        <main class="page sv-page">
            <PageTitle title={id ? 'Edit survey' : 'New survey'} />
            <Loaded loadable={survey}>{(value) => <Form projectId={projectId} editing={value} />}</Loaded>
        </main>
    );
}
