// A form's pieces: a property filter's operators, an action's busy state and error, a confirmation dialog, a Delete button that
// asks first, a form's Submit and Cancel, the Name and Description fields. Styles in style.css.

import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';
import { type ApiError, asApiError } from './api';
import { navigate } from './router';
import { Dialog, ErrorText, Field, fieldError } from './ui';

/** A property filter's operators in PostHog's words, as a form offers them: [operator, words]. */
export const PROPERTY_OPERATORS: [string, string][] = [
    ['exact', 'equals'],
    ['is_not', 'does not equal'],
    ['icontains', 'contains'],
    ['not_icontains', 'does not contain'],
    ['regex', 'matches regex'],
    ['not_regex', 'does not match regex'],
    ['gt', '>'],
    ['gte', '≥'],
    ['lt', '<'],
    ['lte', '≤'],
    ['is_set', 'is set'],
    ['is_not_set', 'is not set'],
];

/**
 * An action the page runs (a save, a delete): `busy` while it runs, and its error in the API's
 * words, cleared when it runs again. `run` answers whether it succeeded.
 */
export function useAction(): { busy: boolean; error: ApiError | null; setError: (error: ApiError | null) => void; run: (work: () => Promise<unknown>) => Promise<boolean> } {
    const [busy, setBusy] = useState(false);
    const [error, setError] = useState<ApiError | null>(null);
    async function run(work: () => Promise<unknown>): Promise<boolean> {
        setBusy(true);
        setError(null);
        try {
            await work();
            return true;
        } catch (thrown) {
            setError(asApiError(thrown));
            return false;
        } finally {
            setBusy(false);
        }
    }
    return { busy, error, setError, run };
}

/**
 * A dialog that asks before an action: the `children` say what it does, `confirm` names its
 * button (`confirmClass`, disabled while `busy`), beside Cancel (first when `cancelFirst`) in a row
 * of `actionsClass`.
 */
export function ConfirmDialog({
    title,
    children,
    confirm,
    confirmClass = 'primary danger',
    actionsClass = 'dialog-actions',
    cancelFirst,
    busy,
    onConfirm,
    onCancel,
}: {
    title: string;
    children: ComponentChildren;
    confirm: string;
    confirmClass?: string;
    actionsClass?: string;
    cancelFirst?: boolean;
    busy?: boolean;
    onConfirm: () => void;
    onCancel: () => void;
}) {
    const cancel = (
        <button type="button" class="secondary" onClick={onCancel}>
            Cancel
        </button>
    );
    return (
        <Dialog title={title} onClose={onCancel}>
            <p>{children}</p>
            <div class={actionsClass}>
                {cancelFirst && cancel}
                <button type="button" class={confirmClass} disabled={busy} onClick={onConfirm}>
                    {confirm}
                </button>
                {!cancelFirst && cancel}
            </div>
        </Dialog>
    );
}

/** A Delete button that asks `question` first (the browser's confirm), then goes to `to` once `onDelete` succeeds (answers something truthy). */
export function DeleteButton({ question, to, disabled, onDelete }: { question: string; to: string; disabled?: boolean; onDelete: () => Promise<unknown> }) {
    return (
        <button
            type="button"
            class="secondary danger"
            disabled={disabled}
            onClick={async () => {
                if (!window.confirm(question)) return;
                if (await onDelete()) navigate(to);
            }}
        >
            Delete
        </button>
    );
}

/** A form's submit button (`submit` its text, disabled while `disabled`) and Cancel, in a toolbar. */
export function SubmitCancel({ submit, disabled, onCancel }: { submit: ComponentChildren; disabled: boolean; onCancel: () => void }) {
    return (
        <div class="toolbar">
            <button type="submit" class="primary" disabled={disabled}>
                {submit}
            </button>
            <button type="button" class="secondary" onClick={onCancel}>
                Cancel
            </button>
        </div>
    );
}

/**
 * The Name and Description fields of a dashboard's or an insight's form, each with the API's
 * message for it, and any other error under them.
 */
export function NameDescriptionFields({
    name,
    description,
    onName,
    onDescription,
    error,
    maxLength,
}: {
    name: string;
    description: string;
    onName: (name: string) => void;
    onDescription: (description: string) => void;
    error: ApiError | null;
    maxLength?: number;
}) {
    return (
        <>
            <Field label="Name" error={fieldError(error, 'name')}>
                <input name="name" value={name} maxLength={maxLength} autoFocus onInput={(event) => onName(event.currentTarget.value)} />
            </Field>
            <Field label="Description" error={fieldError(error, 'description')}>
                <textarea name="description" rows={2} value={description} onInput={(event) => onDescription(event.currentTarget.value)} />
            </Field>
            {error && !fieldError(error, 'name') && !fieldError(error, 'description') && <ErrorText error={error} />}
        </>
    );
}
