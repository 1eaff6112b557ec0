// The console's shell: who is logged in decides the page. Logged out, `/login`; logged in, the
// navigation and the section the path names (pages.tsx). `analytics serve` answers every
// section's paths with index.html.

import { useEffect, useRef, useState } from 'preact/hooks';
import { ApiError, type Project, type User, api, asApiError, onSessionEnded } from './api';
import { Login } from './login';
import { SECTIONS, SectionPage, sectionOf } from './pages';
import { Link, navigate, useLocation } from './router';
import { ErrorText } from './ui';

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
    navigate(path, !push);
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

    /** Opens the page the address names if the browser holds a session, else the login page. */
    async function resume() {
        try {
            const session = await loadSession();
            setView({ kind: 'home', session });
            if (window.location.pathname.startsWith(PATHS.login)) go(PATHS.home, false);
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
        void resume();
        return () => onSessionEnded(null);
    }, []);

    const location = useLocation();
    // Back to a console page after logging out: the login page again, and the reverse.
    useEffect(() => {
        if (view.kind === 'login' && !location.path.startsWith(PATHS.login)) void resume();
        if (view.kind === 'home' && location.path.startsWith(PATHS.login)) go(PATHS.home, false);
    }, [location.path]);
    const found = view.kind === 'home' ? sectionOf(location.path) : null;

    useEffect(() => {
        const section = found && found.section.path !== '/' ? `${found.section.label} · ` : '';
        const place = view.kind === 'home' ? `${section}${view.session.project.name} · ` : view.kind === 'login' ? 'Log in · ' : '';
        document.title = `${place}Analytics`;
    }, [view, found?.section]);

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
                    <div class="shell">
                        <Navigation path={found?.section.path ?? null} />
                        {found ? (
                            <SectionPage
                                key={found.section.path}
                                section={found.section}
                                project={view.session.project}
                                user={view.session.user}
                                location={location}
                                rest={found.rest}
                                onProjectChanged={(project) => setView({ kind: 'home', session: { ...view.session, project } })}
                            />
                        ) : (
                            <main class="page">
                                <h1>Not found</h1>
                                <p class="muted">There is no page at {location.path}.</p>
                            </main>
                        )}
                    </div>
                </>
            );
    }
}

function Navigation({ path }: { path: string | null }) {
    return (
        <nav class="sidebar" aria-label="Sections">
            {SECTIONS.map((section) => (
                <Link key={section.path} href={section.path} class={section.path === path ? 'current' : ''}>
                    {section.label}
                </Link>
            ))}
        </nav>
    );
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
