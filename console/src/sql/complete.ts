// What to suggest at the caret of the SQL editor: the context (a property key after
// `properties.`, an event name in `event = '...'`, a column after `alias.`, a table after FROM,
// else any word) and the static suggestions for it. Property keys and event names come from the
// definitions API (the editor asks for them); this file only reads the text.

import { FUNCTIONS, KEYWORDS, TABLE_FUNCTIONS, TABLES, type Table } from './catalog';

export type SuggestionKind = 'table' | 'column' | 'function' | 'property' | 'event' | 'keyword';

export interface Suggestion {
    label: string;
    /** The text that replaces the word typed so far. */
    insert: string;
    kind: SuggestionKind;
    detail: string;
    /** Where the caret goes, counted back from the end of `insert` (inside a function's `()`). */
    back?: number;
}

export type Context =
    /** After `properties.` (`event`) or `person.properties.` (`person`). */
    | { kind: 'property'; type: 'event' | 'person'; prefix: string; from: number }
    /** Inside the quotes of `event = '...'` or `event IN ('...', '...`. */
    | { kind: 'event'; prefix: string; from: number }
    /** A word: `qualifier` is what stands before a dot (`e.` → `e`), `afterFrom` after FROM/JOIN. */
    | { kind: 'word'; prefix: string; from: number; qualifier: string | null; afterFrom: boolean };

const NOT_ALIASES = new Set([
    'where', 'prewhere', 'group', 'order', 'limit', 'having', 'join', 'inner', 'left', 'right', 'full', 'cross',
    'on', 'using', 'union', 'as', 'settings', 'offset', 'array', 'final', 'sample', 'window', 'format',
]);

/** The tables the query names (FROM/JOIN), by the name or alias it uses for them. */
export function tablesOf(text: string): Map<string, Table> {
    const found = new Map<string, Table>();
    for (const match of text.matchAll(/\b(?:FROM|JOIN)\s+([A-Za-z_][\w]*)(?:\s+(?:AS\s+)?([A-Za-z_][\w]*))?/gi)) {
        const table = TABLES.find((one) => one.name === match[1]);
        if (!table) continue;
        found.set(table.name, table);
        const alias = match[2];
        if (alias && !NOT_ALIASES.has(alias.toLowerCase())) found.set(alias, table);
    }
    return found;
}

function insideString(before: string): boolean {
    let inside = false;
    for (let index = 0; index < before.length; index += 1) {
        const char = before[index];
        if (char === '\\' && inside) index += 1;
        else if (char === "'") inside = !inside;
    }
    return inside;
}

/** What the caret at `caret` is completing, or null where nothing is suggested. */
export function contextAt(text: string, caret: number): Context | null {
    const before = text.slice(0, caret);
    if (insideString(before)) {
        const event = /\bevent\s*(?:=|!=|<>|(?:NOT\s+)?IN\s*\((?:\s*'[^']*'\s*,)*)\s*'([^'\\]*)$/i.exec(before);
        return event ? { kind: 'event', prefix: event[1]!, from: caret - event[1]!.length } : null;
    }
    // In a comment: nothing.
    const line = before.slice(before.lastIndexOf('\n') + 1);
    if (line.includes('--')) return null;
    const property = /(?:\b([A-Za-z_]\w*)\.)?\b(person\.properties|properties)\.([\w$]*)$/.exec(before);
    if (property) {
        const prefix = property[3]!;
        const tables = tablesOf(text);
        // `person.properties.` matches as the qualifier `person` and `properties`.
        const person = property[2] === 'person.properties' || (property[1] === 'person' && !tables.has('person'));
        let type: 'event' | 'person' = person ? 'person' : 'event';
        if (type === 'event') {
            const qualified = property[1] ? tables.get(property[1]) : null;
            const only = tables.size > 0 && [...tables.values()].every((table) => table.name === 'persons');
            if (qualified?.name === 'persons' || (!property[1] && only)) type = 'person';
        }
        return { kind: 'property', type, prefix, from: caret - prefix.length };
    }
    const word = /[A-Za-z_$][\w$]*$/.exec(before);
    const prefix = word ? word[0] : '';
    const from = caret - prefix.length;
    let qualifier: string | null = null;
    if (before[from - 1] === '.') {
        const owner = /([A-Za-z_]\w*)\.$/.exec(before.slice(0, from));
        if (!owner) return null;
        qualifier = owner[1]!;
    }
    const afterFrom = /\b(?:FROM|JOIN)\s+$/i.test(before.slice(0, from));
    return { kind: 'word', prefix, from, qualifier, afterFrom };
}

const MAX = 60;

function matches(label: string, prefix: string): boolean {
    return label.toLowerCase().startsWith(prefix.toLowerCase()) && label !== prefix;
}

function columnSuggestions(table: Table, prefix: string): Suggestion[] {
    return table.columns
        .filter((column) => matches(column.name, prefix))
        .map((column) => ({ label: column.name, insert: column.name, kind: 'column' as const, detail: `${table.name} · ${column.type}` }));
}

const functionSuggestions = FUNCTIONS.map(([name, family, doc]): Suggestion => ({
    label: name,
    insert: `${name}()`,
    back: 1,
    kind: 'function',
    detail: `${family}: ${doc}`,
}));

function tableSuggestions(prefix: string): Suggestion[] {
    return [
        ...TABLES.filter((table) => matches(table.name, prefix)).map(
            (table): Suggestion => ({ label: table.name, insert: table.name, kind: 'table', detail: table.doc }),
        ),
        ...TABLE_FUNCTIONS.filter(([name]) => matches(name, prefix)).map(
            ([name, doc]): Suggestion => ({ label: name, insert: `${name}()`, back: 1, kind: 'table', detail: doc }),
        ),
    ];
}

/** The static suggestions for a word context (tables, columns, functions, keywords); none
 * when the word is already a whole known name (Enter then ends the line), unless `asked`. */
export function wordSuggestions(text: string, context: Extract<Context, { kind: 'word' }>, asked = false): Suggestion[] {
    const found = allWordSuggestions(text, context);
    if (!asked && context.prefix && isKnownWord(text, context)) return [];
    return found;
}

function isKnownWord(text: string, context: Extract<Context, { kind: 'word' }>): boolean {
    const word = context.prefix;
    // Aliases named elsewhere (the word being typed after a table looks like one itself).
    const tables = tablesOf(text.slice(0, context.from) + text.slice(context.from + word.length));
    if (context.qualifier) {
        const table = tables.get(context.qualifier) ?? TABLES.find((one) => one.name === context.qualifier);
        return context.qualifier === 'person' ? word === 'properties' || word === 'id' : !!table?.columns.some((column) => column.name === word);
    }
    return (
        TABLES.some((table) => table.name === word || table.columns.some((column) => column.name === word)) ||
        FUNCTIONS.some(([name]) => name === word) ||
        KEYWORDS.some((keyword) => keyword.split(' ').includes(word.toUpperCase())) ||
        tables.has(word)
    );
}

function allWordSuggestions(text: string, context: Extract<Context, { kind: 'word' }>): Suggestion[] {
    const { prefix, qualifier } = context;
    const tables = tablesOf(text);
    if (qualifier) {
        if (qualifier === 'person' && !tables.has('person')) {
            return [
                { label: 'properties', insert: 'properties', kind: 'column', detail: "events · the person's properties" },
                { label: 'id', insert: 'id', kind: 'column', detail: "events · the person's id" },
            ].filter((one) => matches(one.label, prefix)) as Suggestion[];
        }
        const table = tables.get(qualifier) ?? TABLES.find((one) => one.name === qualifier);
        return table ? columnSuggestions(table, prefix).slice(0, MAX) : [];
    }
    if (context.afterFrom) return tableSuggestions(prefix);
    const used = new Set(tables.values());
    const columns = [...(used.size ? used : [TABLES[0]!])].flatMap((table) => columnSuggestions(table, prefix));
    const functions = functionSuggestions.filter((one) => matches(one.label, prefix));
    const keywords = KEYWORDS.filter((keyword) => matches(keyword, prefix)).map(
        (keyword): Suggestion => ({ label: keyword, insert: `${keyword} `, kind: 'keyword', detail: 'keyword' }),
    );
    return [...columns, ...functions, ...tableSuggestions(prefix), ...keywords].slice(0, MAX);
}

/** A property key as the dialect reads it after `properties.` (quoted when not a plain name). */
export function propertyPath(name: string): string {
    return /^[A-Za-z_$][\w$]*$/.test(name) ? name : `\`${name.replaceAll('`', '``')}\``;
}
