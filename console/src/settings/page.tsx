// Settings: the project (name, time zone, the filters that mark test accounts), its token and
// the snippet that sends events to this server, and the user's own two-factor authentication
// and personal API keys. Everything is read from and written to the API
// (`/api/projects/:id/`, `/api/users/@me/two_factor_*`, `/api/personal_api_keys/`).

import { useEffect, useState } from 'preact/hooks';
import { type Paged, type Project, http, projectPath, withParams } from '../api';
import type { PageProps } from '../pages';
import { ErrorText, Field, Loaded, PageTitle, fieldError, useLoad } from '../ui';
import { PROPERTY_OPERATORS, useAction } from '../ui-form';
import { CopyButton } from './copy';
import { PersonalApiKeys } from './keys';
import { TwoFactor } from './two-factor';

/** The project as `GET /api/projects/:id/` answers it. */
interface ProjectSettings {
    id: number;
    name: string;
    timezone: string;
    api_token: string;
    test_account_filters: TestAccountFilter[];
}

interface TestAccountFilter {
    key: string;
    operator?: string;
    value?: unknown;
    type?: string;
}

export default function Page({ project, onProjectChanged }: PageProps) {
    const path = projectPath(project.id, '');
    const [settings, reload] = useLoad(() => http.get<ProjectSettings>(path), [path]);
    return (
        <main class="page settings-page">
            <PageTitle title="Settings" />
            <nav class="settings-toc" aria-label="Settings sections">
                <a href="#project">Project</a>
                <a href="#test-accounts">Test accounts</a>
                <a href="#snippet">Token and snippet</a>
                <a href="#two-factor">Two-factor authentication</a>
                <a href="#personal-api-keys">Personal API keys</a>
            </nav>
            <Loaded loadable={settings}>
                {(value) => (
                    <>
                        <ProjectForm
                            path={path}
                            settings={value}
                            onSaved={(saved) => {
                                reload();
                                onProjectChanged(saved);
                            }}
                        />
                        <TestAccounts path={path} projectId={value.id} filters={value.test_account_filters} onSaved={reload} />
                        <Snippet token={value.api_token} />
                    </>
                )}
            </Loaded>
            <TwoFactor />
            <PersonalApiKeys timeZone={project.timezone} />
        </main>
    );
}

/** The zones the browser knows (IANA), with the project's own even if the browser lacks it. */
function timeZones(current: string): string[] {
    let zones: string[] = [];
    try {
        zones = Intl.supportedValuesOf('timeZone');
    } catch {
        zones = [];
    }
    const all = new Set(['UTC', ...zones]);
    if (current) all.add(current);
    return [...all].sort((a, b) => (a === 'UTC' ? -1 : b === 'UTC' ? 1 : a.localeCompare(b)));
}

function ProjectForm({ path, settings, onSaved }: { path: string; settings: ProjectSettings; onSaved: (project: Project) => void }) {
    const [name, setName] = useState(settings.name);
    const [timezone, setTimezone] = useState(settings.timezone);
    const { busy, error, run: attempt } = useAction();
    const [saved, setSaved] = useState(false);
    useEffect(() => {
        setName(settings.name);
        setTimezone(settings.timezone);
    }, [settings.name, settings.timezone]);

    async function submit(event: Event) {
        event.preventDefault();
        setSaved(false);
        await attempt(async () => {
            const project = await http.patch<Project>(path, { name, timezone });
            setSaved(true);
            onSaved(project);
        });
    }

    const changed = name !== settings.name || timezone !== settings.timezone;
    const general = error && !fieldError(error, 'name') && !fieldError(error, 'timezone') ? error : null;
    return (
        <section class="panel settings-section" id="project" aria-labelledby="project-title">
            <h2 id="project-title">Project</h2>
            <form class="settings-form" onSubmit={(event) => void submit(event)}>
                <Field label="Project name" error={fieldError(error, 'name')}>
                    <input
                        name="name"
                        value={name}
                        maxLength={200}
                        onInput={(event) => {
                            setName(event.currentTarget.value);
                            setSaved(false);
                        }}
                    />
                </Field>
                <Field label="Time zone" error={fieldError(error, 'timezone')} hint="Days, weeks and months of every insight are this zone's.">
                    <select
                        name="timezone"
                        value={timezone}
                        onChange={(event) => {
                            setTimezone(event.currentTarget.value);
                            setSaved(false);
                        }}
                    >
                        {timeZones(settings.timezone).map((zone) => (
                            <option key={zone} value={zone}>
                                {zone.replaceAll('_', ' ')}
                            </option>
                        ))}
                    </select>
                </Field>
                {general && <ErrorText error={general} />}
                <div class="settings-actions">
                    <button type="submit" class="secondary primary-action" disabled={busy || !changed}>
                        Save
                    </button>
                    {saved && !changed && (
                        <span class="muted" role="status">
                            Saved.
                        </span>
                    )}
                </div>
            </form>
        </section>
    );
}

/** Operators a test-account filter may use (PostHog's words). */
const FILTER_OPERATORS = PROPERTY_OPERATORS.filter(([name]) => !['gt', 'gte', 'lt', 'lte'].includes(name));

function operatorWords(operator: string | undefined): string {
    return FILTER_OPERATORS.find(([name]) => name === (operator ?? 'exact'))?.[1] ?? operator ?? 'equals';
}

function filterValue(value: unknown): string {
    if (value === undefined || value === null) return '';
    if (Array.isArray(value)) return value.map(String).join(', ');
    return typeof value === 'object' ? JSON.stringify(value) : String(value);
}

function TestAccounts({ path, projectId, filters, onSaved }: { path: string; projectId: number; filters: TestAccountFilter[]; onSaved: () => void }) {
    const [type, setType] = useState<'event' | 'person'>('person');
    const [key, setKey] = useState('');
    const [operator, setOperator] = useState('icontains');
    const [value, setValue] = useState('');
    const { busy, error, run: attempt } = useAction();
    const [keys] = useLoad(
        () => http.get<Paged<{ name: string }>>(withParams(projectPath(projectId, 'property_definitions/'), { type, limit: 500 })),
        [projectId, type],
    );

    async function save(next: TestAccountFilter[]): Promise<boolean> {
        return attempt(async () => {
            await http.patch(path, { test_account_filters: next });
            onSaved();
        });
    }

    async function add(event: Event) {
        event.preventDefault();
        const needsValue = operator !== 'is_set' && operator !== 'is_not_set';
        const filter: TestAccountFilter = { key: key.trim(), operator, type };
        filter.value = needsValue ? value : operator;
        if (await save([...filters, filter])) {
            setKey('');
            setValue('');
        }
    }

    const needsValue = operator !== 'is_set' && operator !== 'is_not_set';
    const listId = 'test-account-keys';
    return (
        <section class="panel settings-section" id="test-accounts" aria-labelledby="test-accounts-title">
            <h2 id="test-accounts-title">Filter out internal and test users</h2>
            <p class="muted">Insights that filter out test accounts leave out events these filters match.</p>
            {filters.length === 0 ? (
                <p class="muted">No filters.</p>
            ) : (
                <ul class="filter-list" aria-label="Test account filters">
                    {filters.map((filter, index) => (
                        <li key={`${index}-${filter.key}`} class="filter-item">
                            <span class="filter-text">
                                <span class="badge">{filter.type ?? 'event'}</span> <code>{filter.key}</code> {operatorWords(filter.operator)}{' '}
                                {filter.operator !== 'is_set' && filter.operator !== 'is_not_set' && <code>{filterValue(filter.value)}</code>}
                            </span>
                            <button
                                type="button"
                                class="link danger-text"
                                disabled={busy}
                                aria-label={`Remove the filter on ${filter.key}`}
                                onClick={() => void save(filters.filter((_, at) => at !== index))}
                            >
                                Remove
                            </button>
                        </li>
                    ))}
                </ul>
            )}
            <form class="filter-form" aria-label="Add a test account filter" onSubmit={(event) => void add(event)}>
                <label class="field">
                    <span class="field-label">Of</span>
                    <select name="filter-type" value={type} onChange={(event) => setType(event.currentTarget.value as 'event' | 'person')}>
                        <option value="person">Person property</option>
                        <option value="event">Event property</option>
                    </select>
                </label>
                <label class="field">
                    <span class="field-label">Property</span>
                    <input name="filter-key" list={listId} value={key} required onInput={(event) => setKey(event.currentTarget.value)} placeholder="email" />
                    <datalist id={listId}>
                        {(keys.state === 'done' ? keys.value.results : []).map((definition) => (
                            <option key={definition.name} value={definition.name} />
                        ))}
                    </datalist>
                </label>
                <label class="field">
                    <span class="field-label">Operator</span>
                    <select name="filter-operator" value={operator} onChange={(event) => setOperator(event.currentTarget.value)}>
                        {FILTER_OPERATORS.map(([name, words]) => (
                            <option key={name} value={name}>
                                {words}
                            </option>
                        ))}
                    </select>
                </label>
                {needsValue && (
                    <label class="field">
                        <span class="field-label">Value</span>
                        <input name="filter-value" value={value} required onInput={(event) => setValue(event.currentTarget.value)} placeholder="@example.com" />
                    </label>
                )}
                <button type="submit" class="secondary" disabled={busy}>
                    Add filter
                </button>
            </form>
            {error && <ErrorText error={error} />}
        </section>
    );
}

/** posthog-js's `init` as PostHog shows it, sending to this server. */
function snippetOf(token: string, origin: string): string {
    return `import posthog from 'posthog-js'

posthog.init('${token}', {
    api_host: '${origin}',
})`;
}

function Snippet({ token }: { token: string }) {
    const snippet = snippetOf(token, window.location.origin);
    return (
        <section class="panel settings-section" id="snippet" aria-labelledby="snippet-title">
            <h2 id="snippet-title">Project token and snippet</h2>
            <p class="muted">The token identifies the project to SDKs that send events and evaluate flags. It is safe in a web page.</p>
            <div class="secret-row">
                <code id="project-token">{token}</code>
                <CopyButton text={token} what="the project token" />
            </div>
            <p>
                Install posthog-js (<code>npm install posthog-js</code>), then initialize it in your app:
            </p>
            <pre class="snippet">
                <code id="project-snippet">{snippet}</code>
            </pre>
            <CopyButton text={snippet} what="the snippet" />
        </section>
    );
}
