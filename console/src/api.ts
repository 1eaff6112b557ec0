// The console's only way out: same-origin requests to the public API, with the session cookie,
// the CSRF token on writes, and every failure turned into the API's own words (`detail`, and the
// field `attr` names) for the page to show.

/** The error body every route answers with. */
interface ErrorBody {
    type?: string;
    code?: string;
    detail?: string;
    attr?: string | null;
}

/** A failed request, as a person should read it: the API's `detail`, about the field `attr`. */
export class ApiError extends Error {
    readonly status: number;
    readonly code: string;
    readonly detail: string;
    readonly attr: string | null;

    constructor(status: number, code: string, detail: string, attr: string | null = null) {
        super(detail);
        this.name = 'ApiError';
        this.status = status;
        this.code = code;
        this.detail = detail;
        this.attr = attr;
    }
}

/** Turns anything thrown into an ApiError (a bug in the page is still shown as text). */
export function asApiError(error: unknown): ApiError {
    if (error instanceof ApiError) return error;
    const message = error instanceof Error ? error.message : String(error);
    return new ApiError(0, 'client_error', message);
}

/** The cookie the API sets at login for the page to echo in `X-CSRFToken` (PostHog's name). */
const CSRF_COOKIE = 'posthog_csrftoken';

function csrfToken(): string | null {
    for (const part of document.cookie.split(';')) {
        const [name, ...value] = part.trim().split('=');
        if (name === CSRF_COOKIE) return decodeURIComponent(value.join('='));
    }
    return null;
}

/** Called when a request answers 401 outside the login steps: the session is over. */
let sessionEnded: ((error: ApiError) => void) | null = null;

export function onSessionEnded(callback: ((error: ApiError) => void) | null): void {
    sessionEnded = callback;
}

const LOGIN_PATHS = new Set(['/api/login/', '/api/login/token/']);

export type Method = 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE';

/** One request to the API: `path` is absolute (`/api/...`), `body` is sent as JSON. */
export async function request<T>(method: Method, path: string, body?: unknown): Promise<T> {
    const headers: Record<string, string> = { Accept: 'application/json' };
    const init: RequestInit = { method, credentials: 'same-origin', headers, cache: 'no-store' };
    if (body !== undefined) {
        headers['Content-Type'] = 'application/json';
        init.body = JSON.stringify(body);
    }
    if (method !== 'GET') {
        const token = csrfToken();
        if (token) headers['X-CSRFToken'] = token;
    }
    let response: Response;
    try {
        response = await fetch(path, init);
    } catch {
        throw new ApiError(0, 'network_error', 'Could not reach the server. Check the connection and try again.');
    }
    const text = await response.text();
    let parsed: unknown = null;
    if (text) {
        try {
            parsed = JSON.parse(text);
        } catch {
            parsed = null;
        }
    }
    if (response.ok) return parsed as T;
    const error = parsed && typeof parsed === 'object' ? (parsed as ErrorBody) : {};
    // A failed async query answers its status, whose `error_message` is the reason.
    const status = (parsed as { query_status?: { error_message?: string | null } } | null)?.query_status;
    const failure = new ApiError(
        response.status,
        error.code ?? 'error',
        error.detail ??
            status?.error_message ??
            `The server answered ${[response.status, response.statusText].filter(Boolean).join(' ')}.`,
        error.attr ?? null,
    );
    if (response.status === 401 && !LOGIN_PATHS.has(path) && sessionEnded) sessionEnded(failure);
    throw failure;
}

export interface User {
    uuid: string;
    email: string;
    first_name: string;
    team: { id: number; name: string } | null;
}

export interface Project {
    id: number;
    name: string;
    timezone: string;
    api_token: string;
}

export interface QueryResult {
    columns: string[];
    results: unknown[][];
}

/** Queries one project may run at once are limited (ANALYTICS_QUERY_CONCURRENCY, 4 by
 * default): the page keeps to two at a time, and waits and retries when the API answers 429. */
const QUERY_CONCURRENCY = 2;
const QUERY_RETRIES = 3;
let queriesRunning = 0;
const queriesWaiting: (() => void)[] = [];

export async function throttled<T>(run: () => Promise<T>): Promise<T> {
    // A freed slot is handed to the next waiter directly, so no newcomer can slip in between.
    if (queriesRunning < QUERY_CONCURRENCY) queriesRunning += 1;
    else await new Promise<void>((resolve) => queriesWaiting.push(resolve));
    try {
        for (let attempt = 0; ; attempt += 1) {
            try {
                return await run();
            } catch (error) {
                if (!(error instanceof ApiError) || error.status !== 429 || attempt >= QUERY_RETRIES) throw error;
                await new Promise((resolve) => setTimeout(resolve, 500 * 2 ** attempt));
            }
        }
    } finally {
        const next = queriesWaiting.shift();
        if (next) next();
        else queriesRunning -= 1;
    }
}

/** A page of a list route (PostHog's `limit`/`offset` pagination). */
export interface Paged<T> {
    count?: number;
    next: string | null;
    previous: string | null;
    results: T[];
}

/** `path` with `params` as its query string (empty values left out). */
export function withParams(path: string, params: Record<string, string | number | boolean | null | undefined>): string {
    const search = new URLSearchParams();
    for (const [name, value] of Object.entries(params)) {
        if (value !== null && value !== undefined && value !== '') search.set(name, String(value));
    }
    const query = search.toString();
    return query ? `${path}${path.includes('?') ? '&' : '?'}${query}` : path;
}

/** The project's routes: `project(id, 'feature_flags/')` is `/api/projects/<id>/feature_flags/`. */
export function projectPath(projectId: number, rest: string): string {
    return `/api/projects/${projectId}/${rest}`;
}

/** Plain verbs for any route (the pages' own calls): same session, CSRF and errors. */
export const http = {
    get: <T>(path: string) => request<T>('GET', path),
    post: <T>(path: string, body?: unknown) => request<T>('POST', path, body ?? {}),
    patch: <T>(path: string, body: unknown) => request<T>('PATCH', path, body),
    put: <T>(path: string, body: unknown) => request<T>('PUT', path, body),
    delete: <T = null>(path: string) => request<T>('DELETE', path),
};

export const api = {
    login: (email: string, password: string) =>
        request<{ success: boolean }>('POST', '/api/login/', { email, password }),
    loginToken: (token: string) => request<{ success: boolean }>('POST', '/api/login/token/', { token }),
    logout: () => request<{ success: boolean }>('POST', '/api/logout/'),
    me: () => request<User>('GET', '/api/users/@me/'),
    currentProject: () => request<Project>('GET', '/api/projects/@current/'),
    /** Runs HogQL in the project; the numbers are the API's, never recomputed here. */
    query: (projectId: number, query: string) =>
        throttled(() =>
            request<QueryResult>('POST', `/api/projects/${projectId}/query/`, {
                query: { kind: 'HogQLQuery', query },
            }),
        ),
};
