// Form pieces of both a new endpoint and an endpoint's page: the variables of a query being written
// (code names and their default values), and the materialization's sync frequency.

import type { ApiError } from '../api';
import { Field, fieldError } from '../ui';
import { SYNC_FREQUENCIES } from './model';

/** How often a materialized endpoint recomputes, with the API's message for it. */
export function SyncFrequencyField({ value, onChange, error }: { value: string; onChange: (value: string) => void; error: ApiError | null }) {
    return (
        <Field label="Sync every" error={fieldError(error, 'sync_frequency')}>
            <select value={value} onChange={(e) => onChange(e.currentTarget.value)}>
                {SYNC_FREQUENCIES.map((f) => (
                    <option key={f} value={f}>
                        {f}
                    </option>
                ))}
            </select>
        </Field>
    );
}

export function VariableRows({ rows, onChange }: { rows: { code_name: string; value: string }[]; onChange: (rows: { code_name: string; value: string }[]) => void }) {
    return (
        <div class="ep-variables-editor">
            <span class="field-label">Variables</span>
            <span class="hint">Use one in the query as <code>{'{variables.name}'}</code>.</span>
            {rows.map((row, i) => (
                <div class="ep-variable-row" key={i}>
                    <input aria-label={`Variable ${i + 1} name`} placeholder="name" value={row.code_name} onInput={(e) => onChange(rows.map((r, j) => (j === i ? { ...r, code_name: e.currentTarget.value } : r)))} />
                    <input aria-label={`Variable ${i + 1} default`} placeholder="default value" value={row.value} onInput={(e) => onChange(rows.map((r, j) => (j === i ? { ...r, value: e.currentTarget.value } : r)))} />
                    <button type="button" class="link" onClick={() => onChange(rows.filter((_, j) => j !== i))}>
                        Remove
                    </button>
                </div>
            ))}
            <button type="button" class="secondary" onClick={() => onChange([...rows, { code_name: '', value: '' }])}>
                Add variable
            </button>
        </div>
    );
}
