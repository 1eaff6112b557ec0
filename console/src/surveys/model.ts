// Surveys as the API shows them (SurveySerializer), and small helpers the pages share.

import { http, projectPath } from '../api';

export type QuestionType = 'open' | 'rating' | 'single_choice' | 'multiple_choice' | 'link';

export interface Question {
    id?: string;
    type: QuestionType;
    question: string;
    description?: string;
    optional?: boolean;
    buttonText?: string;
    scale?: number;
    display?: 'number' | 'emoji';
    lowerBoundLabel?: string;
    upperBoundLabel?: string;
    choices?: string[];
    hasOpenChoice?: boolean;
    link?: string;
}

export interface Appearance {
    backgroundColor?: string;
    borderColor?: string;
    textColor?: string;
    submitButtonColor?: string;
    submitButtonTextColor?: string;
    ratingButtonColor?: string;
    ratingButtonActiveColor?: string;
    position?: string;
    placeholder?: string;
    displayThankYouMessage?: boolean;
    thankYouMessageHeader?: string;
    [key: string]: unknown;
}

export interface PropertyFilter {
    key: string;
    value: unknown;
    operator?: string;
    type?: string;
}

export interface Survey {
    id: string;
    name: string;
    description: string;
    type: 'popover' | 'api' | 'widget' | 'external_survey';
    questions: Question[];
    conditions: { url?: string; urlMatchType?: string; [key: string]: unknown } | null;
    appearance: Appearance | null;
    start_date: string | null;
    end_date: string | null;
    archived: boolean;
    created_at: string;
    linked_flag_id: number | null;
    linked_flag: { id: number; key: string } | null;
    targeting_flag: { id: number; key: string; filters?: { groups?: { properties?: PropertyFilter[] }[] } } | null;
}

export type Status = 'draft' | 'running' | 'stopped';

/** Where a survey stands, read off its dates as PostHog's list does. */
export function statusOf(survey: Pick<Survey, 'start_date' | 'end_date'>): Status {
    if (!survey.start_date) return 'draft';
    if (survey.end_date && new Date(survey.end_date).getTime() <= Date.now()) return 'stopped';
    return 'running';
}

export const QUESTION_TYPES: { value: QuestionType; label: string }[] = [
    { value: 'open', label: 'Open text' },
    { value: 'rating', label: 'Rating' },
    { value: 'single_choice', label: 'Single choice' },
    { value: 'multiple_choice', label: 'Multiple choice' },
    { value: 'link', label: 'Link' },
];

export function surveysPath(projectId: number, rest = ''): string {
    return projectPath(projectId, `surveys/${rest}`);
}

export const surveysApi = {
    get: (projectId: number, id: string) => http.get<Survey>(surveysPath(projectId, `${id}/`)),
};

/** An answer as text (a multiple choice answers a list). */
export function answerText(answer: unknown): string {
    if (answer === null || answer === undefined) return '';
    if (Array.isArray(answer)) return answer.map(String).join(', ');
    if (typeof answer === 'object') return JSON.stringify(answer);
    return String(answer);
}
