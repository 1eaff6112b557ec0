// Small pieces every page uses: errors in the API's words, loading, a paged list's controls, a
// dialog, a data hook. Styles in style.css. A list page's pieces are in ui-list.tsx, a form's in
// ui-form.tsx.

import type { ComponentChildren } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { type ApiError, asApiError } from './api';

export type Loadable<T> = { state: 'loading' } | { state: 'done'; value: T } | { state: 'failed'; error: ApiError };

/** Loads `load()` whenever `deps` change (the newest answer wins); `reload` runs it again. */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[]): [Loadable<T>, () => void] {
    const [loadable, setLoadable] = useState<Loadable<T>>({ state: 'loading' });
    const [round, setRound] = useState(0);
    useEffect(() => {
        let current = true;
        setLoadable((previous) => (previous.state === 'done' && round > 0 ? previous : { state: 'loading' }));
        load().then(
            (value) => current && setLoadable({ state: 'done', value }),
            (error) => current && setLoadable({ state: 'failed', error: asApiError(error) }),
        );
        return () => {
            current = false;
        };
    }, [...deps, round]);
    return [loadable, () => setRound((value) => value + 1)];
}

/** The children once loaded; "Loading…" or the error until then. */
export function Loaded<T>({ loadable, children }: { loadable: Loadable<T>; children: (value: T) => ComponentChildren }) {
    if (loadable.state === 'loading') return <p class="muted loading">Loading…</p>;
    if (loadable.state === 'failed') return <ErrorText error={loadable.error} />;
    return <>{children(loadable.value)}</>;
}

/** An error as a person reads it: the API's `detail`, and the field it names. */
export function ErrorText({ error }: { error: ApiError }) {
    return (
        <p class="form-error" role="alert">
            {error.detail}
            {error.attr ? ` (${error.attr})` : ''}
        </p>
    );
}

/** A page's title row, with its actions on the right. */
export function PageTitle({ title, children }: { title: string; children?: ComponentChildren }) {
    return (
        <div class="page-title">
            <h1>{title}</h1>
            {children && <div class="page-actions">{children}</div>}
        </div>
    );
}

/** Previous/next for a list read `limit` at a time from `offset`; `hasMore` when the API says so. */
export function Pager({ offset, limit, shown, hasMore, onOffset }: { offset: number; limit: number; shown: number; hasMore: boolean; onOffset: (offset: number) => void }) {
    if (offset === 0 && !hasMore) return null;
    return (
        <nav class="pager" aria-label="Pages">
            <button type="button" class="secondary" disabled={offset === 0} onClick={() => onOffset(Math.max(0, offset - limit))}>
                Previous
            </button>
            <span class="muted">
                {shown === 0 ? 'None' : `${offset + 1}–${offset + shown}`}
            </span>
            <button type="button" class="secondary" disabled={!hasMore} onClick={() => onOffset(offset + limit)}>
                Next
            </button>
        </nav>
    );
}

/** A modal dialog (the browser's `<dialog>`): Escape or the close button end it. */
export function Dialog({ title, onClose, children, wide }: { title: string; onClose: () => void; children: ComponentChildren; wide?: boolean }) {
    const dialog = useRef<HTMLDialogElement>(null);
    useEffect(() => {
        const element = dialog.current;
        if (element && !element.open) element.showModal();
        return () => element?.close();
    }, []);
    return (
        <dialog ref={dialog} class={wide ? 'dialog wide' : 'dialog'} onClose={onClose} aria-label={title}>
            <div class="dialog-head">
                <h2>{title}</h2>
                <button type="button" class="link" aria-label="Close" onClick={() => dialog.current?.close()}>
                    ✕
                </button>
            </div>
            {children}
        </dialog>
    );
}

/** A labelled form field; `error` is the API's message when its `attr` names this field. */
export function Field({ label, error, children, hint }: { label: string; error?: string | null; children: ComponentChildren; hint?: string }) {
    return (
        <label class={error ? 'field invalid' : 'field'}>
            <span class="field-label">{label}</span>
            {children}
            {hint && <span class="hint">{hint}</span>}
            {error && (
                <span class="form-error" role="alert">
                    {error}
                </span>
            )}
        </label>
    );
}

/** The message for the field `attr` names, when the error is about it. */
export function fieldError(error: ApiError | null, attr: string): string | null {
    return error && error.attr !== null && (error.attr === attr || error.attr.startsWith(`${attr}.`) || error.attr.startsWith(`${attr}[`))
        ? error.detail
        : null;
}
