// Personal API keys of the logged-in user (`/api/personal_api_keys/`): the list, a new key
// (label, scopes from PostHog's scope objects, all projects or some), its secret shown once,
// rolling a key (a new secret, shown once) and deleting one. The API refuses changes from a
// session logged in more than two hours ago; that refusal is shown in its own words.

import { useState } from 'preact/hooks';
import { ApiError, type Paged, asApiError, http, withParams } from '../api';
import { timeFormatter } from '../format';
import { Dialog, ErrorText, Field, Loaded, fieldError, useLoad } from '../ui';
import { ScrollTable } from '../ui-list';
import { ConfirmDialog, useAction } from '../ui-form';
import { CopyButton } from './copy';

const KEYS = '/api/personal_api_keys/';

/** PostHog's `API_SCOPE_OBJECTS`, as the API checks them (`PersonalApiKey::SCOPE_OBJECTS`). */
export const SCOPE_OBJECTS = [
    'action',
    'activity_log',
    'annotation',
    'batch_export',
    'cohort',
    'dashboard',
    'dashboard_template',
    'early_access_feature',
    'endpoint',
    'event_definition',
    'experiment',
    'export',
    'feature_flag',
    'group',
    'hog_function',
    'insight',
    'notebook',
    'organization',
    'organization_member',
    'person',
    'plugin',
    'project',
    'property_definition',
    'query',
    'session_recording',
    'session_recording_playlist',
    'sharing_configuration',
    'subscription',
    'survey',
    'user',
    'webhook',
    'personal_api_key',
] as const;

export interface PersonalApiKey {
    id: string;
    label: string;
    value: string | null;
    mask_value: string;
    created_at: string;
    last_used_at: string | null;
    last_rolled_at: string | null;
    scopes: string[];
    scoped_teams: number[] | null;
}

interface ProjectBasic {
    id: number;
    name: string;
}

/** `object:read` → "Object read". */
function scopeWords(scopes: string[]): string {
    if (scopes.includes('*')) return 'All access';
    return scopes.map((scope) => scope.replace(':', ' ').replaceAll('_', ' ')).join(', ');
}

/** A secret shown once: after creating or rolling a key. */
interface Revealed {
    label: string;
    value: string;
    rolled: boolean;
}

export function PersonalApiKeys({ timeZone }: { timeZone: string }) {
    const [keys, reload] = useLoad(() => http.get<PersonalApiKey[]>(KEYS), []);
    const [projects] = useLoad(() => http.get<Paged<ProjectBasic>>(withParams('/api/projects/', { limit: 200 })), []);
    const [creating, setCreating] = useState(false);
    const [revealed, setRevealed] = useState<Revealed | null>(null);
    const [confirm, setConfirm] = useState<{ kind: 'roll' | 'delete'; key: PersonalApiKey } | null>(null);
    const [error, setError] = useState<ApiError | null>(null);
    const [busy, setBusy] = useState(false);
    const time = timeFormatter(timeZone);
    const projectNames = new Map((projects.state === 'done' ? projects.value.results : []).map((project) => [project.id, project.name]));

    async function confirmed() {
        if (!confirm) return;
        const { kind, key } = confirm;
        setBusy(true);
        setError(null);
        try {
            if (kind === 'roll') {
                const rolled = await http.post<PersonalApiKey>(`${KEYS}${key.id}/roll/`);
                setRevealed({ label: rolled.label, value: rolled.value ?? '', rolled: true });
            } else {
                await http.delete(`${KEYS}${key.id}/`);
                if (revealed && revealed.label === key.label) setRevealed(null);
            }
            setConfirm(null);
            reload();
        } catch (thrown) {
            setConfirm(null);
            setError(asApiError(thrown));
        } finally {
            setBusy(false);
        }
    }

    return (
        <section class="panel settings-section" id="personal-api-keys" aria-labelledby="keys-title">
            <div class="panel-head">
                <h2 id="keys-title">Personal API keys</h2>
                <button type="button" class="secondary" onClick={() => setCreating(true)}>
                    New key
                </button>
            </div>
            <p class="muted">
                A key lets a script call the API as you, within its scopes and projects. Send it as <code>Authorization: Bearer &lt;key&gt;</code>.
            </p>
            {revealed && (
                <div class="revealed-secret" role="region" aria-label="New key secret">
                    <p>
                        <strong>
                            {revealed.rolled ? `“${revealed.label}” has a new secret` : `“${revealed.label}” is ready`}: copy it now, it is shown only once.
                        </strong>
                        {revealed.rolled && ' The old secret no longer works.'}
                    </p>
                    <div class="secret-row">
                        <code id="new-key-secret">{revealed.value}</code>
                        <CopyButton text={revealed.value} what="the key" />
                    </div>
                    <button type="button" class="link" onClick={() => setRevealed(null)}>
                        Done
                    </button>
                </div>
            )}
            {error && <ErrorText error={error} />}
            <Loaded loadable={keys}>
                {(list) =>
                    list.length === 0 ? (
                        <p class="muted">No keys yet.</p>
                    ) : (
                        <ScrollTable
                            class="keys-table"
                            head={
                                <>
                                    <th>Label</th>
                                    <th>Key</th>
                                    <th>Scopes</th>
                                    <th>Projects</th>
                                    <th>Created</th>
                                    <th>Last used</th>
                                    <th>
                                        <span class="visually-hidden">Actions</span>
                                    </th>
                                </>
                            }
                        >
                            {list.map((key) => (
                                <tr key={key.id} data-id={key.id}>
                                    <td class="key-label">{key.label}</td>
                                    <td data-label="Key">
                                        <code>{key.mask_value}</code>
                                    </td>
                                    <td class="key-scopes" data-label="Scopes">
                                        {scopeWords(key.scopes)}
                                    </td>
                                    <td data-label="Projects">{key.scoped_teams ? key.scoped_teams.map((id) => projectNames.get(id) ?? `#${id}`).join(', ') : 'All'}</td>
                                    <td class="nowrap" data-label="Created">
                                        {time(new Date(key.created_at))}
                                    </td>
                                    <td class="nowrap" data-label="Last used">
                                        {key.last_used_at ? time(new Date(key.last_used_at)) : <span class="muted">Never</span>}
                                    </td>
                                    <td class="key-actions">
                                        <button type="button" class="link" aria-label={`Roll ${key.label}`} onClick={() => setConfirm({ kind: 'roll', key })}>
                                            Roll
                                        </button>
                                        <button type="button" class="link danger-text" aria-label={`Delete ${key.label}`} onClick={() => setConfirm({ kind: 'delete', key })}>
                                            Delete
                                        </button>
                                    </td>
                                </tr>
                            ))}
                        </ScrollTable>
                    )
                }
            </Loaded>
            {creating && (
                <CreateKeyDialog
                    projects={projects.state === 'done' ? projects.value.results : []}
                    onClose={() => setCreating(false)}
                    onCreated={(key) => {
                        setCreating(false);
                        setRevealed({ label: key.label, value: key.value ?? '', rolled: false });
                        reload();
                    }}
                />
            )}
            {confirm && (
                <ConfirmDialog
                    title={confirm.kind === 'roll' ? `Roll “${confirm.key.label}”?` : `Delete “${confirm.key.label}”?`}
                    confirm={confirm.kind === 'roll' ? 'Roll key' : 'Delete key'}
                    confirmClass={confirm.kind === 'roll' ? 'secondary primary-action' : 'settings-danger'}
                    actionsClass="settings-actions end"
                    cancelFirst
                    busy={busy}
                    onConfirm={() => void confirmed()}
                    onCancel={() => setConfirm(null)}
                >
                    {confirm.kind === 'roll'
                        ? 'The key gets a new secret, shown once; the current secret stops working at once.'
                        : 'Scripts using this key will be refused from now on. This cannot be undone.'}
                </ConfirmDialog>
            )}
        </section>
    );
}

type Access = '' | 'read' | 'write';
type Preset = 'all' | 'read' | 'custom';

function CreateKeyDialog({ projects, onClose, onCreated }: { projects: ProjectBasic[]; onClose: () => void; onCreated: (key: PersonalApiKey) => void }) {
    const [label, setLabel] = useState('');
    const [preset, setPreset] = useState<Preset>('custom');
    const [access, setAccess] = useState<Record<string, Access>>({});
    const [allProjects, setAllProjects] = useState(true);
    const [chosen, setChosen] = useState<Set<number>>(new Set());
    const { busy, error, setError, run: attempt } = useAction();

    function scopes(): string[] {
        if (preset === 'all') return ['*'];
        if (preset === 'read') return SCOPE_OBJECTS.map((object) => `${object}:read`);
        return SCOPE_OBJECTS.filter((object) => access[object]).map((object) => `${object}:${access[object]}`);
    }

    async function submit(event: Event) {
        event.preventDefault();
        const picked = scopes();
        if (picked.length === 0) {
            // An empty list is a legacy full-access key to the API: ask for a choice instead.
            setError(new ApiError(0, 'client_error', 'Choose at least one scope.', 'scopes'));
            return;
        }
        await attempt(async () => {
            const key = await http.post<PersonalApiKey>(KEYS, {
                label,
                scopes: picked,
                scoped_teams: allProjects ? null : [...chosen],
            });
            onCreated(key);
        });
    }

    const known = ['label', 'scopes', 'scoped_teams'];
    const general = error && !(error.attr && known.some((attr) => fieldError(error, attr))) ? error : null;
    return (
        <Dialog title="New personal API key" onClose={onClose} wide>
            <form class="key-form" onSubmit={(event) => void submit(event)}>
                <Field label="Label" error={fieldError(error, 'label')} hint="What uses it, e.g. “Nightly export”.">
                    <input name="label" maxLength={40} value={label} onInput={(event) => setLabel(event.currentTarget.value)} />
                </Field>
                <fieldset class="key-fieldset">
                    <legend>Scopes</legend>
                    <div class="choice-row" role="radiogroup" aria-label="Scope preset">
                        {(
                            [
                                ['custom', 'Choose'],
                                ['read', 'Read only'],
                                ['all', 'All access'],
                            ] as [Preset, string][]
                        ).map(([value, words]) => (
                            <label key={value} class="choice">
                                <input type="radio" name="preset" value={value} checked={preset === value} onChange={() => setPreset(value)} />
                                {words}
                            </label>
                        ))}
                    </div>
                    {preset === 'custom' && (
                        <div class="scope-grid" role="group" aria-label="Scopes by object">
                            {SCOPE_OBJECTS.map((object) => (
                                <label key={object} class="scope-row">
                                    <span class="scope-name">{object.replaceAll('_', ' ')}</span>
                                    <select
                                        name={`scope-${object}`}
                                        aria-label={`${object} access`}
                                        value={access[object] ?? ''}
                                        onChange={(event) => setAccess({ ...access, [object]: event.currentTarget.value as Access })}
                                    >
                                        <option value="">No access</option>
                                        <option value="read">Read</option>
                                        <option value="write">Write</option>
                                    </select>
                                </label>
                            ))}
                        </div>
                    )}
                    {fieldError(error, 'scopes') && (
                        <p class="form-error" role="alert">
                            {fieldError(error, 'scopes')}
                        </p>
                    )}
                </fieldset>
                <fieldset class="key-fieldset">
                    <legend>Projects</legend>
                    <div class="choice-row">
                        <label class="choice">
                            <input type="radio" name="projects" checked={allProjects} onChange={() => setAllProjects(true)} />
                            All projects
                        </label>
                        <label class="choice">
                            <input type="radio" name="projects" checked={!allProjects} onChange={() => setAllProjects(false)} />
                            Only these
                        </label>
                    </div>
                    {!allProjects && (
                        <div class="project-choices">
                            {projects.map((project) => (
                                <label key={project.id} class="choice">
                                    <input
                                        type="checkbox"
                                        checked={chosen.has(project.id)}
                                        onChange={(event) => {
                                            const next = new Set(chosen);
                                            if (event.currentTarget.checked) next.add(project.id);
                                            else next.delete(project.id);
                                            setChosen(next);
                                        }}
                                    />
                                    {project.name}
                                </label>
                            ))}
                        </div>
                    )}
                    {fieldError(error, 'scoped_teams') && (
                        <p class="form-error" role="alert">
                            {fieldError(error, 'scoped_teams')}
                        </p>
                    )}
                </fieldset>
                {general && <ErrorText error={general} />}
                <div class="settings-actions end">
                    <button type="button" class="secondary" onClick={onClose}>
                        Cancel
                    </button>
                    <button type="submit" class="secondary primary-action" disabled={busy}>
                        Create key
                    </button>
                </div>
            </form>
        </Dialog>
    );
}
