// Home's daily events chart: the API's daily counts as bars (SeriesChart), with the same numbers
// in its hidden table (`#daily-table`) for screen readers and the test.

import { useMemo } from 'preact/hooks';
import type { QueryResult } from './api';
import { asNumber, asText } from './format';
import { SeriesChart } from './series-chart';

interface Props {
    /** The API's answer: a row per day, `day` (its start) and `events`. */
    result: QueryResult;
    timezone: string;
}

export function DailyChart({ result, timezone }: Props) {
    // Each day's start in Unix seconds, and its count, as the API gave them.
    const [days, series] = useMemo(() => {
        const day = result.columns.indexOf('day');
        const events = result.columns.indexOf('events');
        return [
            result.results.map((row) => Date.parse(asText(row[day])) / 1000),
            [{ label: 'Events', values: result.results.map((row) => asNumber(row[events])) }],
        ];
    }, [result]);
    return <SeriesChart x={days} series={series} kind="bar" timezone={timezone} height={220} caption="Events per day" id="daily" />;
}
