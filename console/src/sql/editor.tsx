// The SQL text box: a plain textarea (monospace, no wrapping) with a list of suggestions under
// the caret: tables, columns, functions and keywords (catalog.ts), property keys after
// `properties.` / `person.properties.` and event names in `event = '...'`, both from the
// definitions API. Arrows move, Enter or Tab accepts, Escape closes, Ctrl+Space opens it;
// Ctrl/Cmd+Enter runs the query.

import { useLayoutEffect, useRef, useState } from 'preact/hooks';
import { type Paged, http, projectPath, withParams } from '../api';
import { formatCount } from '../format';
import { type Context, type Suggestion, contextAt, propertyPath, wordSuggestions } from './complete';
import { highlight } from './highlight';

interface Definition {
    name: string;
    property_type?: string | null;
    volume_30_day?: number | null;
}

/** Definitions asked for already, by route and search (one editor's lifetime is short). */
const definitions = new Map<string, Promise<Definition[]>>();

function loadDefinitions(projectId: number, path: string, params: Record<string, string | number>): Promise<Definition[]> {
    const url = withParams(projectPath(projectId, path), { ...params, limit: 30 });
    let known = definitions.get(url);
    if (!known) {
        known = http.get<Paged<Definition>>(url).then((page) => page.results);
        // A failed look-up is asked again next time.
        known.catch(() => definitions.delete(url));
        definitions.set(url, known);
    }
    return known;
}

async function suggestionsFor(projectId: number, text: string, context: Context, asked: boolean): Promise<Suggestion[]> {
    if (context.kind === 'word') return wordSuggestions(text, context, asked);
    if (context.kind === 'property') {
        const found = await loadDefinitions(projectId, 'property_definitions/', { type: context.type, search: context.prefix });
        // A whole key typed: Enter ends the line (Ctrl+Space still lists the longer ones).
        if (!asked && found.some((one) => one.name === context.prefix)) return [];
        return found
            .filter((one) => one.name !== context.prefix)
            .map((one) => ({
                label: one.name,
                insert: propertyPath(one.name),
                kind: 'property' as const,
                detail: `${context.type === 'person' ? 'person property' : 'event property'}${one.property_type ? ` · ${one.property_type}` : ''}`,
            }));
    }
    const found = await loadDefinitions(projectId, 'event_definitions/', { search: context.prefix, ordering: '-volume_30_day' });
    if (!asked && found.some((one) => one.name === context.prefix)) return [];
    return found
        .filter((one) => one.name !== context.prefix)
        .map((one) => ({
            label: one.name,
            insert: one.name.replaceAll('\\', '\\\\').replaceAll("'", "\\'"),
            kind: 'event' as const,
            detail: one.volume_30_day === null || one.volume_30_day === undefined ? 'event' : `${formatCount(one.volume_30_day)} in the last 30 days`,
        }));
}

interface Open {
    context: Context;
    items: Suggestion[];
    active: number;
    top: number;
    left: number;
}

export interface SqlEditorProps {
    projectId: number;
    value: string;
    onChange: (value: string) => void;
    /** Ctrl/Cmd+Enter. */
    onRun?: () => void;
    label?: string;
    rows?: number;
    id?: string;
}

let editors = 0;

export function SqlEditor({ projectId, value, onChange, onRun, label = 'SQL query', rows = 8, id }: SqlEditorProps) {
    const area = useRef<HTMLTextAreaElement>(null);
    const measure = useRef<HTMLSpanElement>(null);
    const list = useRef<HTMLUListElement>(null);
    const colours = useRef<HTMLPreElement>(null);
    const [open, setOpen] = useState<Open | null>(null);
    const [listId] = useState(() => `sql-suggestions-${(editors += 1)}`);
    // The newest look-up wins; older answers arriving late are dropped.
    const round = useRef(0);

    /** Where `offset` of the text sits in the box, for the list's corner. */
    function placeAt(offset: number): { top: number; left: number } {
        const element = area.current!;
        const style = getComputedStyle(element);
        const lineHeight = parseFloat(style.lineHeight) || 20;
        const charWidth = (measure.current?.getBoundingClientRect().width ?? 800) / 100;
        const before = element.value.slice(0, offset);
        const lines = before.split('\n');
        const column = lines[lines.length - 1]!.replaceAll('\t', '    ').length;
        const top = parseFloat(style.paddingTop) + lines.length * lineHeight - element.scrollTop + element.offsetTop + 2;
        const width = element.clientWidth;
        const listWidth = Math.min(416, width);
        const left = Math.max(0, Math.min(parseFloat(style.paddingLeft) + column * charWidth - element.scrollLeft, width - listWidth));
        return { top, left };
    }

    function suggest(force = false) {
        const element = area.current;
        if (!element || element.selectionStart !== element.selectionEnd) return setOpen(null);
        const text = element.value;
        const caret = element.selectionStart;
        const context = contextAt(text, caret);
        const typed = context && (force || context.prefix.length > 0 || context.kind !== 'word' || context.qualifier !== null);
        if (!context || !typed) return setOpen(null);
        const mine = (round.current += 1);
        suggestionsFor(projectId, text, context, force).then(
            (items) => {
                if (mine !== round.current) return;
                if (!items.length) return setOpen(null);
                setOpen({ context, items, active: 0, ...placeAt(context.from) });
            },
            () => mine === round.current && setOpen(null),
        );
    }

    function close() {
        round.current += 1;
        setOpen(null);
    }

    function accept(item: Suggestion) {
        const element = area.current;
        if (!element || !open) return;
        const caret = element.selectionStart;
        // The text may have changed under the list (set from outside): suggest again instead.
        const now = contextAt(element.value, caret);
        if (!now || now.kind !== open.context.kind || now.from !== open.context.from) return suggest();
        let insert = item.insert;
        // An event name closes its quote, unless one is there already.
        if (item.kind === 'event' && element.value[caret] !== "'") insert += "'";
        element.focus();
        element.setSelectionRange(open.context.from, caret);
        // execCommand keeps the browser's undo history; setRangeText where it is refused.
        if (!document.execCommand('insertText', false, insert)) {
            element.setRangeText(insert, open.context.from, caret, 'end');
            onChange(element.value);
        }
        const back = item.back ?? 0;
        if (back) {
            const end = element.selectionStart - back;
            element.setSelectionRange(end, end);
        }
        close();
    }

    function onKeyDown(event: KeyboardEvent) {
        if (event.key === 'Enter' && (event.ctrlKey || event.metaKey)) {
            event.preventDefault();
            close();
            onRun?.();
            return;
        }
        if (event.key === ' ' && event.ctrlKey) {
            event.preventDefault();
            suggest(true);
            return;
        }
        if (!open) return;
        const count = open.items.length;
        if (event.key === 'ArrowDown' || event.key === 'ArrowUp') {
            event.preventDefault();
            const step = event.key === 'ArrowDown' ? 1 : -1;
            setOpen((current) => current && { ...current, active: (current.active + step + count) % count });
        } else if (event.key === 'Enter' || event.key === 'Tab') {
            event.preventDefault();
            accept(open.items[open.active]!);
        } else if (event.key === 'Escape') {
            // Closes the list, not a dialog around the editor.
            event.preventDefault();
            event.stopPropagation();
            close();
        } else if (event.key === 'ArrowLeft' || event.key === 'ArrowRight' || event.key === 'Home' || event.key === 'End' || event.key === 'PageUp' || event.key === 'PageDown') {
            close();
        }
    }

    // The active suggestion stays in sight as the arrows move it.
    useLayoutEffect(() => {
        if (!open) return;
        const active = list.current?.children[open.active] as HTMLElement | undefined;
        active?.scrollIntoView({ block: 'nearest' });
    }, [open?.active, open?.items]);

    const activeId = open ? `${listId}-${open.active}` : undefined;
    return (
        <div class="sql-editor" id={id}>
            <div class="sql-measure-box" aria-hidden="true">
                <span ref={measure} class="sql-measure">
                    {'x'.repeat(100)}
                </span>
            </div>
            <pre ref={colours} class="sql-colours" aria-hidden="true">
                {highlight(value)}
            </pre>
            <textarea
                ref={area}
                class="sql-input"
                value={value}
                rows={rows}
                aria-label={label}
                aria-autocomplete="list"
                aria-controls={listId}
                aria-activedescendant={activeId}
                spellcheck={false}
                autocapitalize="off"
                autocomplete="off"
                wrap="off"
                onInput={(event) => {
                    onChange((event.target as HTMLTextAreaElement).value);
                    suggest();
                }}
                onKeyDown={onKeyDown}
                onBlur={close}
                onClick={close}
                onScroll={(event) => {
                    const element = event.currentTarget as HTMLTextAreaElement;
                    if (colours.current) {
                        colours.current.scrollTop = element.scrollTop;
                        colours.current.scrollLeft = element.scrollLeft;
                    }
                    if (open) setOpen({ ...open, ...placeAt(open.context.from) });
                }}
            />
            {open && (
                <ul ref={list} id={listId} class="sql-suggestions" role="listbox" aria-label="Suggestions" data-prefix={open.context.prefix} style={{ top: `${open.top}px`, left: `${open.left}px` }}>
                    {open.items.map((item, index) => (
                        <li
                            key={`${item.kind}:${item.label}`}
                            id={`${listId}-${index}`}
                            role="option"
                            aria-selected={index === open.active ? 'true' : 'false'}
                            class={index === open.active ? 'active' : undefined}
                            data-kind={item.kind}
                            // Keeps the focus in the text box.
                            onMouseDown={(event) => event.preventDefault()}
                            onClick={() => accept(item)}
                        >
                            <span class="sql-suggestion-label">{item.label}</span>
                            <span class={`sql-suggestion-kind kind-${item.kind}`}>{item.kind}</span>
                            <span class="sql-suggestion-detail">{item.detail}</span>
                        </li>
                    ))}
                </ul>
            )}
        </div>
    );
}
