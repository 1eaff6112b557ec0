// The console's shell: who is logged in decides the page. Two paths only, `/` (Home) and
// `/login`; `analytics serve` answers both with index.html.

import { useEffect, useRef, useState } from 'preact/hooks';
import { ApiError, type Project, type User, api, asApiError, onSessionEnded } from './api';
import { ErrorText, Home } from './home';
import { Login } from './login';

interface Session {
    user: User;
    project: Project;
}

type View =
    | { kind: 'loading' }
    | { kind: 'unavailable'; error: ApiError }
    | { kind: 'login'; notice: string | null }
    | { kind: 'home'; session: Session };

const PATHS = { home: '/', login: '/login' } as const;

function go(path: string, push: boolean) {
    if (window.location.pathname === path) return;
    if (push) window.history.pushState(null, '', path);
    else window.history.replaceState(null, '', path);
}

async function loadSession(): Promise<Session> {
    const [user, project] = await Promise.all([api.me(), api.currentProject()]);
    return { user, project };
}

export function App() {
    const [view, setView] = useState<View>({ kind: 'loading' });
    const shown = useRef(view);
    shown.current = view;

    function showLogin(notice: string | null, push = false) {
        setView({ kind: 'login', notice });
        go(PATHS.login, push);
    }

    /** Opens Home if the browser holds a session, else the login page. */
    async function resume() {
        try {
            const session = await loadSession();
            setView({ kind: 'home', session });
            go(PATHS.home, false);
        } catch (thrown) {
            const error = asApiError(thrown);
            if (error.status === 401 || error.status === 403) showLogin(null);
            else setView({ kind: 'unavailable', error });
        }
    }

    useEffect(() => {
        // Any request answered 401 (the session expired, or ended elsewhere) leads back to login.
        onSessionEnded(() => {
            if (shown.current.kind === 'home') showLogin('Your session has ended. Log in again.');
        });
        const back = () => void resume();
        window.addEventListener('popstate', back);
        void resume();
        return () => {
            onSessionEnded(null);
            window.removeEventListener('popstate', back);
        };
    }, []);

    useEffect(() => {
        const place = view.kind === 'home' ? `${view.session.project.name} · ` : view.kind === 'login' ? 'Log in · ' : '';
        document.title = `${place}Analytics`;
    }, [view]);

    async function loggedIn() {
        const session = await loadSession();
        setView({ kind: 'home', session });
        go(PATHS.home, true);
    }

    /** Ends the session; answers the error to show if the API refused. */
    async function logOut(): Promise<ApiError | null> {
        try {
            await api.logout();
        } catch (thrown) {
            // Already logged out (401) is what was asked for; anything else is shown.
            const error = asApiError(thrown);
            if (error.status !== 401) return error;
        }
        showLogin('You have logged out.', true);
        return null;
    }

    switch (view.kind) {
        case 'loading':
            return <p class="muted loading page-loading">Loading…</p>;
        case 'unavailable':
            return (
                <main class="login">
                    <div class="login-card">
                        <h1 class="brand">Analytics</h1>
                        <ErrorText error={view.error} />
                        <button type="button" class="primary" onClick={() => void resume()}>
                            Try again
                        </button>
                    </div>
                </main>
            );
        case 'login':
            return <Login notice={view.notice} onLoggedIn={loggedIn} />;
        case 'home':
            return (
                <>
                    <Header session={view.session} onLogOut={logOut} />
                    <Home project={view.session.project} />
                </>
            );
    }
}

function Header({ session, onLogOut }: { session: Session; onLogOut: () => Promise<ApiError | null> }) {
    const [busy, setBusy] = useState(false);
    const [error, setError] = useState<ApiError | null>(null);
    return (
        <header class="topbar">
            <span class="brand">Analytics</span>
            <span class="project" title="Project">
                {session.project.name}
            </span>
            <span class="spacer" />
            <span class="user" id="user-email">
                {session.user.email}
            </span>
            <button
                type="button"
                class="secondary"
                disabled={busy}
                onClick={() => {
                    setBusy(true);
                    setError(null);
                    void onLogOut().then((failure) => {
                        setBusy(false);
                        setError(failure);
                    });
                }}
            >
                Log out
            </button>
            {error && <ErrorText error={error} />}
        </header>
    );
}
