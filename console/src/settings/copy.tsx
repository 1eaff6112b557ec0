// A button that copies a text (a token, a secret, a snippet) to the clipboard and says so.

import { useEffect, useState } from 'preact/hooks';

export function CopyButton({ text, label = 'Copy', what }: { text: string; label?: string; what: string }) {
    const [state, setState] = useState<'idle' | 'copied' | 'failed'>('idle');
    useEffect(() => {
        if (state === 'idle') return;
        const timer = setTimeout(() => setState('idle'), 2500);
        return () => clearTimeout(timer);
    }, [state]);
    return (
        <span class="copy">
            <button
                type="button"
                class="secondary copy-button"
                aria-label={`${label} ${what}`}
                onClick={() => {
                    if (!navigator.clipboard) {
                        setState('failed');
                        return;
                    }
                    navigator.clipboard.writeText(text).then(
                        () => setState('copied'),
                        () => setState('failed'),
                    );
                }}
            >
                {label}
            </button>
            <span class="copy-state muted" role="status">
                {state === 'copied' ? 'Copied' : state === 'failed' ? 'Could not copy: select the text instead' : ''}
            </span>
        </span>
    );
}
