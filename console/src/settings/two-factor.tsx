// Two-factor authentication of the logged-in user: its status; setting it up (the secret as a
// QR code and as text, then a code from the app turns it on and the backup codes are shown
// once); new backup codes; turning it off with a code.

import { useState } from 'preact/hooks';
import { http } from '../api';
import { Dialog, ErrorText, Field, Loaded, fieldError, useLoad } from '../ui';
import { useAction } from '../ui-form';
import { CopyButton } from './copy';
import { QrCode } from './qr';

const USER = '/api/users/@me/';

interface Status {
    is_enabled: boolean;
    backup_codes_remaining: number;
    method: string | null;
}

interface Setup {
    secret: string;
    otpauth_uri: string;
    expires_in: number;
}

/** What the panel shows besides the status: a setup under way, or codes to show once. */
type Step = { kind: 'idle' } | { kind: 'setup'; setup: Setup } | { kind: 'codes'; codes: string[]; enabled: boolean };

export function TwoFactor() {
    const [status, reload] = useLoad(() => http.get<Status>(`${USER}two_factor_status/`), []);
    const [step, setStep] = useState<Step>({ kind: 'idle' });
    const { busy, error, run: attempt } = useAction();
    const [disabling, setDisabling] = useState(false);

    async function act(run: () => Promise<void>) {
        await attempt(run);
    }

    const startSetup = () =>
        act(async () => {
            const setup = await http.get<Setup>(`${USER}two_factor_start_setup/`);
            setStep({ kind: 'setup', setup });
        });

    const regenerate = () =>
        act(async () => {
            const answer = await http.post<{ backup_codes: string[] }>(`${USER}two_factor_backup_codes/`);
            setStep({ kind: 'codes', codes: answer.backup_codes, enabled: false });
            reload();
        });

    return (
        <section class="panel settings-section" id="two-factor" aria-labelledby="two-factor-title">
            <div class="panel-head">
                <h2 id="two-factor-title">Two-factor authentication</h2>
                {status.state === 'done' && (
                    <span class={status.value.is_enabled ? 'badge badge-on' : 'badge'} id="two-factor-status">
                        {status.value.is_enabled ? 'Enabled' : 'Off'}
                    </span>
                )}
            </div>
            <Loaded loadable={status}>
                {(value) => (
                    <>
                        {step.kind === 'codes' && (
                            <BackupCodes codes={step.codes} enabled={step.enabled} onDone={() => setStep({ kind: 'idle' })} />
                        )}
                        {step.kind === 'setup' && !value.is_enabled && (
                            <SetupForm
                                setup={step.setup}
                                onEnabled={(codes) => {
                                    setStep({ kind: 'codes', codes, enabled: true });
                                    reload();
                                }}
                                onCancel={() => setStep({ kind: 'idle' })}
                                onRestart={() => void startSetup()}
                            />
                        )}
                        {error && <ErrorText error={error} />}
                        {value.is_enabled ? (
                            step.kind !== 'codes' && (
                                <>
                                    <p>
                                        Logging in asks for a code from your authenticator app, or a backup code.{' '}
                                        <span id="backup-codes-remaining">
                                            {value.backup_codes_remaining} backup {value.backup_codes_remaining === 1 ? 'code' : 'codes'} left.
                                        </span>
                                    </p>
                                    <div class="settings-actions">
                                        <button type="button" class="secondary" disabled={busy} onClick={() => void regenerate()}>
                                            Regenerate backup codes
                                        </button>
                                        <button type="button" class="secondary danger-text" disabled={busy} onClick={() => setDisabling(true)}>
                                            Disable 2FA
                                        </button>
                                    </div>
                                </>
                            )
                        ) : (
                            step.kind === 'idle' && (
                                <>
                                    <p>Protect your account: logging in will also ask for a code from an authenticator app.</p>
                                    <div class="settings-actions">
                                        <button type="button" class="secondary" disabled={busy} onClick={() => void startSetup()}>
                                            Set up 2FA
                                        </button>
                                    </div>
                                </>
                            )
                        )}
                        {disabling && (
                            <DisableDialog
                                onClose={() => setDisabling(false)}
                                onDisabled={() => {
                                    setDisabling(false);
                                    setStep({ kind: 'idle' });
                                    reload();
                                }}
                            />
                        )}
                    </>
                )}
            </Loaded>
        </section>
    );
}

function SetupForm({ setup, onEnabled, onCancel, onRestart }: { setup: Setup; onEnabled: (codes: string[]) => void; onCancel: () => void; onRestart: () => void }) {
    const [code, setCode] = useState('');
    const { busy, error, run: attempt } = useAction();

    async function submit(event: Event) {
        event.preventDefault();
        await attempt(async () => {
            const answer = await http.post<{ backup_codes: string[] }>(`${USER}two_factor_validate/`, { token: code.trim() });
            onEnabled(answer.backup_codes);
        });
    }

    const expired = error?.code === 'setup_expired';
    return (
        <form class="two-factor-setup" onSubmit={(event) => void submit(event)}>
            <ol class="setup-steps">
                <li>
                    <p>Scan this QR code with an authenticator app (1Password, Google Authenticator, Authy…):</p>
                    <QrCode text={setup.otpauth_uri} label="QR code of the authenticator secret" />
                    <p class="muted">
                        Or enter the secret by hand: <code id="two-factor-secret">{setup.secret}</code>{' '}
                        <CopyButton text={setup.secret} what="the secret" />
                    </p>
                </li>
                <li>
                    <Field label="6-digit code from the app" error={fieldError(error, 'token')}>
                        <input
                            name="token"
                            inputMode="numeric"
                            autoComplete="one-time-code"
                            pattern="[0-9 ]*"
                            maxLength={7}
                            value={code}
                            onInput={(event) => setCode(event.currentTarget.value)}
                            required
                        />
                    </Field>
                </li>
            </ol>
            {error && !fieldError(error, 'token') && <ErrorText error={error} />}
            <div class="settings-actions">
                {expired ? (
                    <button type="button" class="secondary" onClick={onRestart}>
                        Start again
                    </button>
                ) : (
                    <button type="submit" class="secondary primary-action" disabled={busy}>
                        Enable 2FA
                    </button>
                )}
                <button type="button" class="secondary" onClick={onCancel}>
                    Cancel
                </button>
            </div>
        </form>
    );
}

function BackupCodes({ codes, enabled, onDone }: { codes: string[]; enabled: boolean; onDone: () => void }) {
    return (
        <div class="backup-codes" role="region" aria-label="Backup codes">
            {enabled && <p class="notice">Two-factor authentication is on.</p>}
            <p>
                <strong>Save these backup codes now: they are shown only once.</strong> Each logs you in once when you do not have your
                authenticator app; earlier codes no longer work.
            </p>
            <ul class="backup-code-list">
                {codes.map((code) => (
                    <li key={code}>
                        <code>{code}</code>
                    </li>
                ))}
            </ul>
            <div class="settings-actions">
                <CopyButton text={codes.join('\n')} what="the backup codes" label="Copy codes" />
                <button type="button" class="secondary" onClick={onDone}>
                    I have saved them
                </button>
            </div>
        </div>
    );
}

function DisableDialog({ onClose, onDisabled }: { onClose: () => void; onDisabled: () => void }) {
    const [code, setCode] = useState('');
    const { busy, error, run: attempt } = useAction();

    async function submit(event: Event) {
        event.preventDefault();
        await attempt(async () => {
            await http.post(`${USER}two_factor_disable/`, { token: code.trim() });
            onDisabled();
        });
    }

    return (
        <Dialog title="Disable two-factor authentication" onClose={onClose}>
            <form onSubmit={(event) => void submit(event)}>
                <p>Enter a code from your authenticator app, or a backup code.</p>
                <Field label="Code" error={fieldError(error, 'token')}>
                    <input name="disable-token" autoComplete="one-time-code" value={code} onInput={(event) => setCode(event.currentTarget.value)} required />
                </Field>
                {error && !fieldError(error, 'token') && <ErrorText error={error} />}
                <div class="settings-actions end">
                    <button type="button" class="secondary" onClick={onClose}>
                        Cancel
                    </button>
                    <button type="submit" class="settings-danger" disabled={busy}>
                        Disable 2FA
                    </button>
                </div>
            </form>
        </Dialog>
    );
}
