// Log in: e-mail and password, then, when the API answers `2fa_required`, the code from an
// authenticator app or a backup code. Failures show the API's `detail`, under the field it names.

import { useEffect, useRef, useState } from 'preact/hooks';
import type { InputHTMLAttributes, Ref, TargetedSubmitEvent } from 'preact';
import { ApiError, api, asApiError } from './api';

type Step = 'password' | 'code';

interface Props {
    /** Shown above the form (why the person is here: logged out, session ended). */
    notice: string | null;
    /** Called once the API has started a session; loads the user and the project. */
    onLoggedIn: () => Promise<void>;
}

const FIELDS: Record<Step, string[]> = { password: ['email', 'password'], code: ['token'] };

export function Login({ notice, onLoggedIn }: Props) {
    const [step, setStep] = useState<Step>('password');
    const [email, setEmail] = useState('');
    const [password, setPassword] = useState('');
    const [code, setCode] = useState('');
    const [error, setError] = useState<ApiError | null>(null);
    const [busy, setBusy] = useState(false);
    const codeInput = useRef<HTMLInputElement>(null);

    useEffect(() => {
        if (step === 'code') codeInput.current?.focus();
    }, [step]);

    async function attempt(send: () => Promise<unknown>) {
        setBusy(true);
        setError(null);
        try {
            await send();
            await onLoggedIn();
        } catch (thrown) {
            const failure = asApiError(thrown);
            if (failure.code === '2fa_required') {
                setCode('');
                setStep('code');
            } else if (failure.code === '2fa_expired') {
                setPassword('');
                setStep('password');
                setError(failure);
            } else {
                setError(failure);
            }
        } finally {
            setBusy(false);
        }
    }

    function submitPassword(event: TargetedSubmitEvent<HTMLFormElement>) {
        event.preventDefault();
        void attempt(() => api.login(email, password));
    }

    function submitCode(event: TargetedSubmitEvent<HTMLFormElement>) {
        event.preventDefault();
        void attempt(() => api.loginToken(code));
    }

    function startOver() {
        setStep('password');
        setPassword('');
        setError(null);
    }

    // An error about one of this step's fields is shown under it; any other above the button.
    const fieldError = (name: string) => (error && error.attr === name ? error.detail : null);
    const formError = error && !(error.attr && FIELDS[step].includes(error.attr)) ? error : null;

    return (
        <main class="login">
            <div class="login-card">
                <h1 class="brand">Analytics</h1>
                {notice && step === 'password' && !error && <p class="notice">{notice}</p>}
                {step === 'password' ? (
                    <form onSubmit={submitPassword} noValidate aria-labelledby="login-title">
                        <h2 id="login-title">Log in</h2>
                        <Field
                            name="email"
                            label="Email"
                            error={fieldError('email')}
                            input={{
                                type: 'email',
                                autocomplete: 'username',
                                value: email,
                                onInput: (event) => setEmail(event.currentTarget.value),
                                autofocus: true,
                            }}
                        />
                        <Field
                            name="password"
                            label="Password"
                            error={fieldError('password')}
                            input={{
                                type: 'password',
                                autocomplete: 'current-password',
                                value: password,
                                onInput: (event) => setPassword(event.currentTarget.value),
                            }}
                        />
                        <FormError error={formError} />
                        <button type="submit" class="primary" disabled={busy}>
                            {busy ? 'Logging in…' : 'Log in'}
                        </button>
                    </form>
                ) : (
                    <form onSubmit={submitCode} noValidate aria-labelledby="code-title">
                        <h2 id="code-title">Two-factor authentication</h2>
                        <p class="hint" id="token-hint">
                            Enter the 6-digit code from your authenticator app, or one of your backup codes.
                        </p>
                        <Field
                            name="token"
                            label="Authentication code"
                            error={fieldError('token')}
                            describedBy="token-hint"
                            input={{
                                type: 'text',
                                autocomplete: 'one-time-code',
                                inputMode: 'text',
                                spellcheck: false,
                                autocapitalize: 'off',
                                value: code,
                                onInput: (event) => setCode(event.currentTarget.value),
                                ref: codeInput,
                            }}
                        />
                        <FormError error={formError} />
                        <button type="submit" class="primary" disabled={busy}>
                            {busy ? 'Checking…' : 'Verify'}
                        </button>
                        <button type="button" class="link" onClick={startOver}>
                            Log in as someone else
                        </button>
                    </form>
                )}
            </div>
        </main>
    );
}

interface FieldProps {
    name: string;
    label: string;
    error: string | null;
    describedBy?: string;
    input: InputHTMLAttributes<HTMLInputElement> & { ref?: Ref<HTMLInputElement> };
}

function Field({ name, label, error, describedBy, input }: FieldProps) {
    const id = `field-${name}`;
    const described = [describedBy, error ? `${id}-error` : null].filter(Boolean).join(' ');
    return (
        <div class={error ? 'field invalid' : 'field'}>
            <label for={id}>{label}</label>
            <input
                {...input}
                id={id}
                name={name}
                aria-invalid={error ? 'true' : 'false'}
                aria-describedby={described || undefined}
            />
            {error && (
                <p class="field-error" id={`${id}-error`} role="alert">
                    {error}
                </p>
            )}
        </div>
    );
}

function FormError({ error }: { error: ApiError | null }) {
    if (!error) return null;
    return (
        <p class="form-error" role="alert">
            {error.detail}
            {error.attr ? ` (${error.attr})` : ''}
        </p>
    );
}
