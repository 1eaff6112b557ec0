// A new insight: the kind's editor, its result under it (rerun as the query changes), and Save
// with a name, which stores the query as PostHog does and opens the saved insight.

import { useState } from 'preact/hooks';
import { type ApiError, asApiError, http, projectPath } from '../api';
import type { PageProps } from '../pages';
import { Link, navigate } from '../router';
import { ErrorText, Field, PageTitle, fieldError } from '../ui';
import type { PersonsRequest, QueryNode } from './kind';
import { KINDS } from './kinds';
import { type Insight, QueryJson, RunView, storedQuery, useQueryRun } from './page-run';
import { PersonsDialog } from './persons';

export function NewInsight({ project, location }: PageProps) {
    const kindName = location.search.get('kind') ?? '';
    const kind = KINDS.find((candidate) => candidate.kind === kindName) ?? null;
    if (!kind) {
        return (
            <main class="page">
                <PageTitle title="New insight" />
                <p class="form-error" role="alert">
                    {kindName ? `There is no kind of insight called ${kindName}.` : 'Choose a kind of insight.'}
                </p>
                <ul class="new-insight-kinds">
                    {KINDS.map((known) => (
                        <li key={known.kind}>
                            <Link href={`/insights/new?kind=${encodeURIComponent(known.kind)}`} class="new-insight-kind">
                                {known.label}
                            </Link>
                        </li>
                    ))}
                </ul>
            </main>
        );
    }
    // Keyed by kind, so picking another kind starts afresh.
    return <NewInsightOf key={kind.kind} project={project} kindName={kind.kind} />;
}

function NewInsightOf({ project, kindName }: { project: PageProps['project']; kindName: string }) {
    const kind = KINDS.find((candidate) => candidate.kind === kindName)!;
    const [query, setQuery] = useState<QueryNode>(() => kind.create());
    const [round, setRound] = useState(0);
    const run = useQueryRun(project, query, 500, round);
    const [name, setName] = useState('');
    const [description, setDescription] = useState('');
    const [saving, setSaving] = useState(false);
    const [error, setError] = useState<ApiError | null>(null);
    const [persons, setPersons] = useState<PersonsRequest | null>(null);

    async function save(event: Event) {
        event.preventDefault();
        setSaving(true);
        setError(null);
        try {
            const body: Record<string, unknown> = { name: name.trim(), query: storedQuery(query), saved: true };
            if (description.trim()) body.description = description.trim();
            const created = await http.post<Insight>(projectPath(project.id, 'insights/'), body);
            navigate(`/insights/${created.short_id || created.id}`);
        } catch (thrown) {
            setError(asApiError(thrown));
            setSaving(false);
        }
    }

    const queryError = error && error.attr && error.attr.startsWith('query') ? error : null;
    return (
        <main class="page insight-page" data-query={JSON.stringify(query)}>
            <PageTitle title={`New ${kind.label.toLowerCase()} insight`}>
                <Link href="/insights" class="secondary-link">
                    All insights
                </Link>
            </PageTitle>
            <form class="panel insight-save" onSubmit={save}>
                <div class="insight-save-fields">
                    <Field label="Name" error={fieldError(error, 'name')}>
                        <input name="name" value={name} maxLength={400} placeholder={`My ${kind.label.toLowerCase()}`} onInput={(event) => setName(event.currentTarget.value)} />
                    </Field>
                    <Field label="Description" error={fieldError(error, 'description')}>
                        <input name="description" value={description} onInput={(event) => setDescription(event.currentTarget.value)} />
                    </Field>
                </div>
                <button type="submit" class="primary" disabled={saving}>
                    {saving ? 'Saving…' : 'Save'}
                </button>
                {error && !fieldError(error, 'name') && !fieldError(error, 'description') && <ErrorText error={error} />}
            </form>
            {queryError && <p class="muted">The query was refused where it says above; change it and save again.</p>}
            <section class="panel insight-editor" aria-label="Query">
                <kind.Editor project={project} query={query} onChange={setQuery} />
                <QueryJson query={query} onChange={setQuery} />
            </section>
            <RunView project={project} query={query} run={run} onPersons={setPersons} onRetry={() => setRound((value) => value + 1)} />
            {persons && <PersonsDialog project={project} request={persons} onClose={() => setPersons(null)} />}
        </main>
    );
}
