// The console's addresses: the path after the origin names the page (`/insights/12`), the query
// string its state (`?search=`), and the browser's history moves between them. No library: a
// history listener and a hook.

import type { ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';

export interface Location {
    path: string;
    search: URLSearchParams;
}

const listeners = new Set<() => void>();

function current(): Location {
    const path = window.location.pathname.replace(/\/+$/, '') || '/';
    return { path, search: new URLSearchParams(window.location.search) };
}

function changed() {
    for (const listener of listeners) listener();
}

window.addEventListener('popstate', changed);

/** Goes to `to` (a path, with a query string if need be); `replace` keeps the history entry. */
export function navigate(to: string, replace = false) {
    if (`${window.location.pathname}${window.location.search}` === to) return;
    if (replace) window.history.replaceState(null, '', to);
    else window.history.pushState(null, '', to);
    window.scrollTo(0, 0);
    changed();
}

/** Replaces the query string's `name` (a filter, a page of a list) without a new history entry. */
export function setSearchParam(name: string, value: string | null) {
    const search = new URLSearchParams(window.location.search);
    if (value === null || value === '') search.delete(name);
    else search.set(name, value);
    const query = search.toString();
    navigate(`${window.location.pathname}${query ? `?${query}` : ''}`, true);
}

/** The current location, re-rendering on every change. */
export function useLocation(): Location {
    const [location, setLocation] = useState(current);
    useEffect(() => {
        const listener = () => setLocation(current());
        listeners.add(listener);
        return () => void listeners.delete(listener);
    }, []);
    return location;
}

/** A link inside the console: a plain `<a>` (open in a new tab works), followed without a reload. */
export function Link({ href, children, class: className, id }: { href: string; children: ComponentChildren; class?: string; id?: string }) {
    return (
        <a
            href={href}
            class={className}
            id={id}
            onClick={(event) => {
                if (event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
                event.preventDefault();
                navigate(href);
            }}
        >
            {children}
        </a>
    );
}
