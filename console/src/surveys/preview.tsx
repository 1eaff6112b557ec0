// A survey drawn from its JSON as the popover would look (no posthog-js): its appearance's
// colours and position, one question at a time.

import { useEffect, useState } from 'preact/hooks';
import type { Appearance, Question } from './model';

const EMOJIS_3 = ['😞', '😐', '😀'];
const EMOJIS_5 = ['😡', '😞', '😐', '🙂', '😀'];

function RatingButtons({ question, appearance }: { question: Question; appearance: Appearance }) {
    const scale = question.scale ?? 5;
    const values = question.display === 'emoji' ? Array.from({ length: scale }, (_, i) => i + 1) : Array.from({ length: scale === 10 ? 11 : scale }, (_, i) => (scale === 10 ? i : i + 1));
    const faces = scale === 3 ? EMOJIS_3 : EMOJIS_5;
    return (
        <div class="sv-rating">
            <div class="sv-rating-buttons">
                {values.map((value, index) => (
                    <span key={value} class="sv-rating-button" style={{ background: appearance.ratingButtonColor ?? undefined }}>
                        {question.display === 'emoji' ? (faces[index] ?? value) : value}
                    </span>
                ))}
            </div>
            <div class="sv-rating-labels">
                <span>{question.lowerBoundLabel}</span>
                <span>{question.upperBoundLabel}</span>
            </div>
        </div>
    );
}

function Body({ question, appearance }: { question: Question; appearance: Appearance }) {
    switch (question.type) {
        case 'rating':
            return <RatingButtons question={question} appearance={appearance} />;
        case 'single_choice':
        case 'multiple_choice':
            return (
                <ul class="sv-choices">
                    {(question.choices ?? []).map((choice, index) => (
                        <li key={index}>
                            <span class={question.type === 'single_choice' ? 'sv-mark radio' : 'sv-mark'} aria-hidden="true" />
                            {choice}
                        </li>
                    ))}
                </ul>
            );
        case 'open':
            return <div class="sv-textarea">{appearance.placeholder || 'Start typing…'}</div>;
        default:
            return null;
    }
}

export function SurveyPreview({ questions, appearance }: { questions: Question[]; appearance: Appearance | null }) {
    const look = appearance ?? {};
    const [index, setIndex] = useState(0);
    useEffect(() => {
        if (index >= questions.length) setIndex(Math.max(0, questions.length - 1));
    }, [questions.length]);
    const question = questions[Math.min(index, questions.length - 1)];
    const position = ['left', 'center', 'right'].includes(String(look.position)) ? String(look.position) : 'right';
    const button = question?.buttonText || (question?.type === 'link' ? 'Go' : index < questions.length - 1 ? 'Next' : 'Submit');
    return (
        <figure class="sv-preview" aria-label="Survey preview">
            <div class={`sv-stage sv-${position}`}>
                {question ? (
                    <div
                        class="sv-popover"
                        data-question={question.question}
                        style={{ background: look.backgroundColor || '#eeeded', borderColor: look.borderColor || '#c9c6c6', color: look.textColor || undefined }}
                    >
                        <span class="sv-close" aria-hidden="true">
                            ✕
                        </span>
                        <p class="sv-question">{question.question || 'Your question'}</p>
                        {question.description && <p class="sv-description">{question.description}</p>}
                        <Body question={question} appearance={look} />
                        <span class="sv-submit" style={{ background: look.submitButtonColor || '#000', color: look.submitButtonTextColor || '#fff' }}>
                            {button}
                        </span>
                    </div>
                ) : (
                    <p class="muted">Add a question to see the survey.</p>
                )}
            </div>
            {questions.length > 1 && (
                <figcaption class="sv-steps">
                    {questions.map((_, i) => (
                        <button key={i} type="button" class={i === index ? 'secondary current' : 'secondary'} aria-pressed={i === index} onClick={() => setIndex(i)}>
                            {i + 1}
                        </button>
                    ))}
                </figcaption>
            )}
        </figure>
    );
}
