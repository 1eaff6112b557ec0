// The persons behind a data point: the `ActorsQuery` a kind's Result hands over, run by the API
// a page at a time (`limit`/`offset`, `hasMore`), each person linking to their page.

import { useState } from 'preact/hooks';
import type { Project } from '../api';
import { asText, formatCount } from '../format';
import { runQuery } from '../query';
import { Link } from '../router';
import { Dialog, Loaded, Pager, useLoad } from '../ui';
import { ScrollTable } from '../ui-list';
import type { PersonsRequest } from './kind';

const LIMIT = 25;

interface ActorsResponse {
    columns: string[];
    results: unknown[][];
    hasMore?: boolean;
}

interface PersonCell {
    id?: string;
    distinct_ids?: string[];
    properties?: Record<string, unknown>;
}

function isPerson(value: unknown): value is PersonCell {
    return !!value && typeof value === 'object' && !Array.isArray(value) && 'distinct_ids' in value;
}

function cellText(value: unknown): string {
    if (typeof value === 'number') return formatCount(value);
    if (value && typeof value === 'object') return JSON.stringify(value);
    return asText(value);
}

export function PersonsDialog({ project, request, onClose }: { project: Project; request: PersonsRequest; onClose: () => void }) {
    const [offset, setOffset] = useState(0);
    const [search, setSearch] = useState('');
    const [typed, setTyped] = useState('');
    const [page] = useLoad(
        () =>
            runQuery<ActorsResponse>(project.id, {
                ...request.query,
                limit: LIMIT,
                offset,
                ...(search ? { search } : {}),
            }),
        [project.id, JSON.stringify(request.query), offset, search],
    );
    return (
        <Dialog title={request.title} onClose={onClose} wide>
            <form
                class="toolbar persons-search"
                onSubmit={(event) => {
                    event.preventDefault();
                    setOffset(0);
                    setSearch(typed.trim());
                }}
            >
                <label class="field">
                    <span class="field-label">Search persons</span>
                    <input type="search" value={typed} placeholder="E-mail, name or distinct id" onInput={(event) => setTyped(event.currentTarget.value)} />
                </label>
                <button type="submit" class="secondary">
                    Search
                </button>
            </form>
            <Loaded loadable={page}>
                {(answer) => {
                    const personAt = answer.columns.findIndex((name) => name === 'person' || name === 'actor' || name.startsWith('person --'));
                    const others = answer.columns.map((name, index) => ({ name, index })).filter(({ index, name }) => index !== personAt && name !== 'id' && !name.startsWith('person.$delete'));
                    return (
                        <div class="persons-list" data-count={answer.results.length}>
                            {answer.results.length === 0 ? (
                                <p class="muted">No persons.</p>
                            ) : (
                                <ScrollTable
                                    class="persons-table"
                                    head={
                                        <>
                                            <th>Person</th>
                                            <th>Distinct ids</th>
                                            {others.map(({ name }) => (
                                                <th key={name} class="num">
                                                    {name === 'event_count' ? 'Events' : name}
                                                </th>
                                            ))}
                                        </>
                                    }
                                >
                                    {answer.results.map((row, rowIndex) => {
                                        const person = personAt >= 0 && isPerson(row[personAt]) ? (row[personAt] as PersonCell) : null;
                                        const idAt = answer.columns.indexOf('id');
                                        const id = person?.id ?? (idAt >= 0 ? asText(row[idAt]) : '');
                                        const distinctIds = person?.distinct_ids ?? [];
                                        const props = person?.properties ?? {};
                                        const label = asText(props.email) || asText(props.name) || distinctIds[0] || id;
                                        const target = id || distinctIds[0] || '';
                                        return (
                                            <tr key={`${id}-${rowIndex}`} class="person-row">
                                                <td>
                                                    {target ? <Link href={`/persons/${encodeURIComponent(target)}`}>{label}</Link> : label}
                                                    {props.name && props.email ? <div class="muted">{asText(props.name)}</div> : null}
                                                </td>
                                                <td class="distinct-ids">{distinctIds.slice(0, 3).join(', ')}{distinctIds.length > 3 ? ` +${distinctIds.length - 3}` : ''}</td>
                                                {others.map(({ name, index }) => (
                                                    <td key={name} class="num">
                                                        {cellText(row[index])}
                                                    </td>
                                                ))}
                                            </tr>
                                        );
                                    })}
                                </ScrollTable>
                            )}
                            <Pager offset={offset} limit={LIMIT} shown={answer.results.length} hasMore={!!answer.hasMore} onOffset={setOffset} />
                        </div>
                    );
                }}
            </Loaded>
        </Dialog>
    );
}
