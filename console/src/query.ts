// Queries that may take a while: started asynchronously, polled for their progress (rows and
// bytes read so far, and the estimate of the total), and cancelled on request, as the query
// routes allow (`async: true`, `GET` and `DELETE /query/:id/`). Any node the API runs can go
// through here: HogQL, trends, funnels, retention, ...

import { ApiError, http, projectPath, throttled } from './api';

/** What a running query has done so far (`query_progress` of its status). */
export interface Progress {
    rows_read: number;
    bytes_read: number;
    estimated_rows_total: number;
    time_elapsed: number;
    active_cpu_time: number;
}

interface QueryStatus {
    id: string;
    complete: boolean;
    error: boolean;
    error_message: string | null;
    query_progress: Progress | null;
    results?: unknown;
}

export interface RunOptions {
    /** Aborting it cancels the query on the server (`DELETE`) and rejects with `cancelled`. */
    signal?: AbortSignal;
    onProgress?: (progress: Progress | null) => void;
    /** PostHog's `refresh` (`blocking`, `force_blocking`, ...), run asynchronously (`force_blocking`
     * as `force_async`); a fresh cached answer if unset. */
    refresh?: string;
}

/** The asynchronous twin of each blocking `refresh` mode. */
const ASYNC_REFRESH: Record<string, string> = { blocking: 'async', force_blocking: 'force_async', force_cache: 'async' };

const FIRST_POLL_MS = 150;
const LONGEST_POLL_MS = 1000;

export function cancelled(): ApiError {
    return new ApiError(0, 'cancelled', 'The query was cancelled.');
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
        const timer = setTimeout(resolve, ms);
        signal?.addEventListener('abort', () => {
            clearTimeout(timer);
            resolve();
        });
    });
}

/** Runs `node` in the project and answers the API's response for it (`results`, `columns`, ...). */
export async function runQuery<T>(projectId: number, node: unknown, options: RunOptions = {}): Promise<T> {
    const { signal, onProgress } = options;
    if (signal?.aborted) throw cancelled();
    const id = crypto.randomUUID().replaceAll('-', '');
    // Asynchronous, keeping what was asked of the cache: `async: true` would mean plain `async`
    // (a fresh cached answer wins), dropping a forced refresh.
    const refresh = options.refresh ? (ASYNC_REFRESH[options.refresh] ?? options.refresh) : 'async';
    const body: Record<string, unknown> = { query: node, refresh, client_query_id: id };
    return throttled(async () => {
        const first = await http.post<T | { query_status: QueryStatus }>(projectPath(projectId, 'query/'), body);
        let status = (first as { query_status?: QueryStatus }).query_status;
        if (!status) return first as T;
        const path = projectPath(projectId, `query/${status.id || id}/`);
        let wait = FIRST_POLL_MS;
        while (!status.complete) {
            onProgress?.(status.query_progress);
            await sleep(wait, signal);
            if (signal?.aborted) {
                // Stop it on the server too; it may have ended meanwhile, which is fine.
                await http.delete(path).catch(() => null);
                throw cancelled();
            }
            wait = Math.min(wait * 2, LONGEST_POLL_MS);
            status = (await http.get<{ query_status: QueryStatus }>(path)).query_status;
        }
        onProgress?.(status.query_progress);
        if (status.error) throw new ApiError(400, 'query_error', status.error_message ?? 'The query failed.');
        return status.results as T;
    });
}
