// The colours behind the SQL text box: the text cut into tokens (strings, comments, numbers,
// keywords, function names, quoted names), each a span of its class, drawn under the textarea
// whose own text is transparent. Only looks: the text box holds the query.

import type { ComponentChildren } from 'preact';
import { KEYWORDS } from './catalog';

const WORDS = new Set(KEYWORDS.flatMap((keyword) => keyword.split(' ')).map((word) => word.toUpperCase()));

const TOKEN = /(--[^\n]*|\/\*[\s\S]*?(?:\*\/|$))|('(?:[^'\\]|\\[\s\S])*(?:'|$))|(`[^`]*`?|"[^"]*"?)|(\b\d+(?:\.\d+)?(?:e[+-]?\d+)?\b|\b0x[0-9a-f]+\b)|([A-Za-z_$][\w$]*)(?=\s*\()|([A-Za-z_$][\w$]*)/gi;

export function highlight(text: string): ComponentChildren[] {
    const parts: ComponentChildren[] = [];
    let at = 0;
    for (const match of text.matchAll(TOKEN)) {
        const index = match.index ?? 0;
        if (index > at) parts.push(text.slice(at, index));
        const [whole, comment, string, quoted, number, call, word] = match;
        const kind = comment ? 'comment' : string ? 'string' : quoted ? 'name' : number ? 'number' : call ? 'call' : word && WORDS.has(word.toUpperCase()) ? 'keyword' : null;
        parts.push(kind ? <span class={`sql-${kind}`}>{whole}</span> : whole);
        at = index + whole.length;
    }
    if (at < text.length) parts.push(text.slice(at));
    // A last empty line still takes its height.
    parts.push('\n ');
    return parts;
}
