// The console's sections, in the order of the navigation: each is a path prefix and a page
// loaded when first opened (its own script chunk; Home is in the main one). A page gets the
// project, the user and the rest of the path (`/insights/12/edit` → `['12', 'edit']`).

import type { ComponentType } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { type Project, type User, asApiError } from './api';
import { Home } from './home';
import type { Location } from './router';
import { ErrorText } from './ui';

export interface PageProps {
    project: Project;
    user: User;
    location: Location;
    /** The path's parts after the section's own. */
    rest: string[];
    /** The project's name or time zone changed (Settings): the shell shows the new ones. */
    onProjectChanged: (project: Project) => void;
}

type PageModule = { default: ComponentType<PageProps> };

export interface Section {
    path: string;
    label: string;
    load: () => Promise<PageModule>;
}

const home: PageModule = { default: ({ project }: PageProps) => <Home project={project} /> };

export const SECTIONS: Section[] = [
    { path: '/', label: 'Home', load: async () => home },
    { path: '/sql', label: 'SQL', load: () => import('./sql/page') },
    { path: '/insights', label: 'Insights', load: () => import('./insights/page') },
    { path: '/dashboards', label: 'Dashboards', load: () => import('./dashboards/page') },
    { path: '/events', label: 'Events', load: () => import('./persons/events') },
    { path: '/persons', label: 'Persons', load: () => import('./persons/page') },
    { path: '/feature_flags', label: 'Feature flags', load: () => import('./flags/page') },
    { path: '/experiments', label: 'Experiments', load: () => import('./experiments/page') },
    { path: '/surveys', label: 'Surveys', load: () => import('./surveys/page') },
    { path: '/endpoints', label: 'Endpoints', load: () => import('./endpoints/page') },
    { path: '/settings', label: 'Settings', load: () => import('./settings/page') },
];

/** The section `path` is in, and the parts after it; `null` for an unknown path. */
export function sectionOf(path: string): { section: Section; rest: string[] } | null {
    for (const section of SECTIONS) {
        if (section.path === '/' ? path === '/' : path === section.path || path.startsWith(`${section.path}/`)) {
            const rest = path.slice(section.path.length).split('/').filter(Boolean).map(decodeURIComponent);
            return { section, rest };
        }
    }
    return null;
}

const loaded = new Map<Section, ComponentType<PageProps>>();

/** The section's page, loading its chunk the first time. */
export function SectionPage({ section, ...props }: PageProps & { section: Section }) {
    const [page, setPage] = useState<ComponentType<PageProps> | null>(() => loaded.get(section) ?? null);
    const [error, setError] = useState<ReturnType<typeof asApiError> | null>(null);
    useEffect(() => {
        let current = true;
        const known = loaded.get(section);
        setError(null);
        if (known) {
            setPage(() => known);
            return;
        }
        setPage(null);
        section.load().then(
            (module) => {
                loaded.set(section, module.default);
                if (current) setPage(() => module.default);
            },
            (thrown) => current && setError(asApiError(thrown)),
        );
        return () => {
            current = false;
        };
    }, [section]);
    if (error) return <main class="page"><ErrorText error={error} /></main>;
    if (!page) return <p class="muted loading page-loading">Loading…</p>;
    const Page = page;
    return <Page {...props} />;
}
