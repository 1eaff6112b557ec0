// A list's pieces: a table that scrolls sideways, and for a list page kept in the address its search
// form, its offset and its table with the pager. Styles in style.css.

import type { ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { navigate, setSearchParam } from './router';
import { Pager } from './ui';

/** The list's offset in the address (`?offset=`), 0 when absent or not a number. */
export function offsetParam(search: URLSearchParams): number {
    return Number(search.get('offset') ?? 0) || 0;
}

/** Moves a list kept in the address to `offset` (the first page drops the parameter). */
export function setOffsetParam(offset: number) {
    setSearchParam('offset', offset ? String(offset) : null);
}

/** Goes to the list at `path` searched for `text` (no `?search=` when blank), replacing the entry. */
export function navigateSearch(path: string, text: string) {
    const params = new URLSearchParams();
    if (text) params.set('search', text);
    navigate(`${path}${params.size ? `?${params}` : ''}`, true);
}

/**
 * A list's search form (`role="search"`): the text as typed, handed trimmed to `onSearch` on
 * submit. With `bare` the input stands alone, named by `label` for screen readers; otherwise it is
 * a labelled field. `children` come after the Search button (filters, a Clear button).
 */
export function SearchForm({
    value,
    onSearch,
    label = 'Search',
    placeholder,
    bare,
    class: className,
    fieldClass,
    children,
}: {
    value: string;
    onSearch: (text: string) => void;
    label?: string;
    placeholder?: string;
    bare?: boolean;
    class?: string;
    fieldClass?: string;
    children?: ComponentChildren;
}) {
    const [typed, setTyped] = useState(value);
    useEffect(() => setTyped(value), [value]);
    const input = (
        <input
            type="search"
            name="search"
            aria-label={bare ? label : undefined}
            placeholder={placeholder}
            value={typed}
            onInput={(event) => setTyped(event.currentTarget.value)}
        />
    );
    return (
        <form
            class={className ? `toolbar ${className}` : 'toolbar'}
            role="search"
            onSubmit={(event) => {
                event.preventDefault();
                onSearch(typed.trim());
            }}
        >
            {bare ? (
                input
            ) : (
                <label class={fieldClass ? `field ${fieldClass}` : 'field'}>
                    <span class="field-label">{label}</span>
                    {input}
                </label>
            )}
            <button type="submit" class="secondary">
                Search
            </button>
            {children}
        </form>
    );
}

/** A table of the `head` cells and the rows, scrolling sideways when wider than the page. */
export function ScrollTable({ class: className, head, children }: { class: string; head: ComponentChildren; children: ComponentChildren }) {
    return (
        <div class="table-scroll">
            <table class={`table ${className}`}>
                <thead>
                    <tr>{head}</tr>
                </thead>
                <tbody>{children}</tbody>
            </table>
        </div>
    );
}

/**
 * A list's rows with its pager: the `empty` message when there are none, else a table (scrolling
 * sideways when wide) of the `head` cells and the rows. The pager moves `?offset=` unless
 * `onOffset` says otherwise.
 */
export function ListTable({
    class: className,
    head,
    shown,
    empty,
    emptyClass,
    offset,
    limit,
    hasMore,
    onOffset = setOffsetParam,
    children,
}: {
    class: string;
    head: ComponentChildren;
    shown: number;
    empty: ComponentChildren;
    emptyClass?: string;
    offset: number;
    limit: number;
    hasMore: boolean;
    onOffset?: (offset: number) => void;
    children: ComponentChildren;
}) {
    return (
        <>
            {shown === 0 ? (
                <p class={emptyClass ? `muted ${emptyClass}` : 'muted'}>{empty}</p>
            ) : (
                <ScrollTable class={className} head={head}>
                    {children}
                </ScrollTable>
            )}
            <Pager offset={offset} limit={limit} shown={shown} hasMore={hasMore} onOffset={onOffset} />
        </>
    );
}
