// Display only: how the API's numbers and times are written for a person (the browser's locale,
// the project's time zone). Nothing here computes a number the page shows.

const integer = new Intl.NumberFormat(undefined, { maximumFractionDigits: 0 });

export function formatCount(value: number): string {
    return integer.format(value);
}

/** A formatter in `timeZone`, or in the browser's own zone if the browser does not know it. */
function inZone(timeZone: string, options: Intl.DateTimeFormatOptions): Intl.DateTimeFormat {
    try {
        return new Intl.DateTimeFormat(undefined, { ...options, timeZone });
    } catch {
        return new Intl.DateTimeFormat(undefined, options);
    }
}

export function dayFormatter(timeZone: string): (date: Date) => string {
    const format = inZone(timeZone, { weekday: 'short', month: 'short', day: 'numeric' });
    return (date) => format.format(date);
}

export function shortDayFormatter(timeZone: string): (date: Date) => string {
    const format = inZone(timeZone, { month: 'short', day: 'numeric' });
    return (date) => format.format(date);
}

export function timeFormatter(timeZone: string): (date: Date) => string {
    const format = inZone(timeZone, {
        month: 'short',
        day: 'numeric',
        hour: '2-digit',
        minute: '2-digit',
        second: '2-digit',
    });
    return (date) => format.format(date);
}

/** A number the API answered (counts come as JSON numbers; be lenient with numeric text). */
export function asNumber(value: unknown): number {
    return typeof value === 'number' ? value : Number(value ?? 0);
}

export function asText(value: unknown): string {
    return value === null || value === undefined ? '' : String(value);
}
