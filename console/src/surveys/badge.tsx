// A survey's status as a badge.

import { type Survey, statusOf } from './model';

export function StatusBadge({ survey }: { survey: Survey }) {
    const status = statusOf(survey);
    return (
        <span class={`badge sv-status sv-${survey.archived ? 'archived' : status}`} data-status={status}>
            {survey.archived ? `archived · ${status}` : status}
        </span>
    );
}
