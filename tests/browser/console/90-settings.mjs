// Settings: the project renamed and moved to another time zone on the page (the API's project
// says so; a blank name is refused under its field); a test-account filter added and removed;
// the token and snippet shown; a personal API key made on the page whose secret, read from the
// page, calls the API, rolled (the old secret refused) and deleted (refused); two-factor
// authentication: turned on from the page (the QR code drawn, the code computed from the
// secret it shows) and back off with a backup code when it was off, or its backup codes
// regenerated when it was on (the full run turns it on before the sections).

import { createHmac, randomUUID } from 'node:crypto';

/** RFC 4648 base32 to bytes. */
function base32(text) {
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';
    let bits = 0;
    let value = 0;
    const out = [];
    for (const char of text.replace(/=+$/, '').toUpperCase()) {
        const index = alphabet.indexOf(char);
        if (index < 0) throw new Error(`not base32: ${char}`);
        value = (value << 5) | index;
        bits += 5;
        if (bits >= 8) {
            out.push((value >>> (bits - 8)) & 0xff);
            bits -= 8;
        }
    }
    return Buffer.from(out);
}

/** RFC 6238: HOTP (SHA-1, 6 digits) of the 30-second step. */
function totp(secret, step) {
    const counter = Buffer.alloc(8);
    counter.writeBigUInt64BE(BigInt(step));
    const digest = createHmac('sha1', base32(secret)).update(counter).digest();
    const offset = digest[digest.length - 1] & 0x0f;
    return String((digest.readUInt32BE(offset) & 0x7fffffff) % 1_000_000).padStart(6, '0');
}

export default async function (t) {
    const { page } = t;
    const run = randomUUID().slice(0, 8);
    const projectPath = `/api/projects/${t.projectId}/`;
    const before = await t.api('GET', projectPath);
    const withKey = (secret, path) => fetch(`${t.server}${path}`, { headers: { Authorization: `Bearer ${secret}` } });

    await t.open('/settings');
    await page.getByRole('heading', { name: 'Settings', exact: true }).waitFor();
    const nameInput = page.locator('input[name="name"]');
    await nameInput.waitFor();
    t.check((await nameInput.inputValue()) === before.name, 'the name field is not the project\'s name');
    t.check((await page.locator('select[name="timezone"]').inputValue()) === before.timezone, 'the time zone is not the project\'s');
    await t.shoot('page');

    // Project: a blank name is refused, under the field; then a new name and time zone.
    const projectForm = page.locator('#project');
    await nameInput.fill('   ');
    await projectForm.getByRole('button', { name: 'Save' }).click();
    const nameError = projectForm.locator('.field.invalid .form-error');
    await nameError.waitFor();
    t.check((await nameError.textContent()) === 'This field may not be blank.', `a blank name shows ${await nameError.textContent()}`);
    const name = `Console settings ${run}`;
    const zone = before.timezone === 'America/Sao_Paulo' ? 'Europe/Berlin' : 'America/Sao_Paulo';
    await nameInput.fill(name);
    await page.locator('select[name="timezone"]').selectOption(zone);
    await projectForm.getByRole('button', { name: 'Save' }).click();
    await projectForm.getByRole('status').filter({ hasText: 'Saved.' }).waitFor();
    const saved = await t.api('GET', projectPath);
    t.check(saved.name === name && saved.timezone === zone, `the API's project is ${saved.name} in ${saved.timezone}`);

    // Test accounts: add a person filter, then remove it.
    const filters = page.locator('#test-accounts');
    const filterValue = `@test-${run}.example`;
    await filters.locator('select[name="filter-type"]').selectOption('person');
    await filters.locator('input[name="filter-key"]').fill('email');
    await filters.locator('select[name="filter-operator"]').selectOption('not_icontains');
    await filters.locator('input[name="filter-value"]').fill(filterValue);
    await filters.getByRole('button', { name: 'Add filter' }).click();
    await filters.locator('.filter-item', { hasText: filterValue }).waitFor();
    const withFilter = await t.api('GET', projectPath);
    const added = withFilter.test_account_filters.at(-1);
    t.check(
        withFilter.test_account_filters.length === before.test_account_filters.length + 1 &&
            added.key === 'email' && added.operator === 'not_icontains' && added.value === filterValue && added.type === 'person',
        `the API's test account filters are ${JSON.stringify(withFilter.test_account_filters)}`,
    );
    const shownFilters = await filters.locator('.filter-item').count();
    t.check(shownFilters === withFilter.test_account_filters.length, `${shownFilters} filters shown, the API has ${withFilter.test_account_filters.length}`);
    await t.shoot('project');
    await filters.getByRole('button', { name: 'Remove the filter on email' }).last().click();
    await filters.locator('.filter-item', { hasText: filterValue }).waitFor({ state: 'detached' });
    const withoutFilter = await t.api('GET', projectPath);
    t.check(JSON.stringify(withoutFilter.test_account_filters) === JSON.stringify(before.test_account_filters), 'removing the filter did not restore the filters');

    // The token and the snippet.
    t.check((await page.locator('#project-token').textContent()) === before.api_token, 'the token shown is not the project\'s');
    const snippet = await page.locator('#project-snippet').textContent();
    t.check(snippet.includes(`posthog.init('${before.api_token}'`) && snippet.includes(`api_host: '${new URL(t.server).origin}'`), `the snippet: ${snippet}`);

    // A personal API key, made on the page, works; rolled, the old secret stops; deleted, refused.
    const keys = page.locator('#personal-api-keys');
    const label = `console ${run}`;
    await keys.getByRole('button', { name: 'New key' }).click();
    const dialog = page.getByRole('dialog', { name: 'New personal API key' });
    await dialog.locator('input[name="label"]').fill(label);
    await dialog.locator('select[name="scope-user"]').selectOption('read');
    await t.shoot('new-key');
    await dialog.getByRole('button', { name: 'Create key' }).click();
    const secretShown = page.locator('#new-key-secret');
    await secretShown.waitFor();
    const secret = await secretShown.textContent();
    t.check(/^phx_\w{20,}$/.test(secret), `the secret shown: ${secret}`);
    const me = await withKey(secret, '/api/users/@me/');
    t.check(me.status === 200, `/api/users/@me/ with the new key: ${me.status}`);
    const user = await me.json();
    t.check(user.email === process.env.CONSOLE_EMAIL, `the key is ${user.email}'s`);
    const listed = (await t.api('GET', '/api/personal_api_keys/')).find((key) => key.label === label);
    t.check(listed && JSON.stringify(listed.scopes) === '["user:read"]', `the API lists the key as ${JSON.stringify(listed)}`);
    const row = keys.locator(`tr[data-id="${listed.id}"]`);
    await row.waitFor();
    t.check((await row.locator('code').textContent()) === listed.mask_value, 'the key\'s mask is not the API\'s');
    await t.shoot('key-created');

    await keys.getByRole('button', { name: `Roll ${label}` }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Roll key' }).click();
    await page.waitForFunction((old) => {
        const shown = document.querySelector('#new-key-secret')?.textContent;
        return shown && shown !== old;
    }, secret);
    const rolled = await secretShown.textContent();
    t.check((await withKey(secret, '/api/users/@me/')).status === 401, 'the old secret still works after the roll');
    t.check((await withKey(rolled, '/api/users/@me/')).status === 200, 'the rolled secret does not work');

    await keys.getByRole('button', { name: `Delete ${label}` }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Delete key' }).click();
    await row.waitFor({ state: 'detached' });
    const refused = await withKey(rolled, '/api/users/@me/');
    t.check(refused.status === 401, `the deleted key answers ${refused.status}`);
    t.check(!(await t.api('GET', '/api/personal_api_keys/')).some((key) => key.label === label), 'the API still lists the deleted key');

    // Two-factor authentication.
    const status = await t.api('GET', '/api/users/@me/two_factor_status/');
    const twoFactor = page.locator('#two-factor');
    if (!status.is_enabled) {
        t.check((await twoFactor.locator('#two-factor-status').textContent()) === 'Off', 'the page does not say 2FA is off');
        await twoFactor.getByRole('button', { name: 'Set up 2FA' }).click();
        const qr = twoFactor.locator('svg.qr-code');
        await qr.waitFor();
        t.check((await qr.locator('path').getAttribute('d')).length > 100, 'the QR code has no modules');
        const shownSecret = await twoFactor.locator('#two-factor-secret').textContent();
        await t.shoot('2fa-setup');
        // A code of a step that is not about to end (the server takes one step either side).
        const step = Math.floor(Date.now() / 30000);
        await twoFactor.locator('input[name="token"]').fill(totp(shownSecret, step));
        await twoFactor.getByRole('button', { name: 'Enable 2FA' }).click();
        const codes = twoFactor.locator('.backup-code-list li');
        await codes.first().waitFor();
        const backup = await codes.allTextContents();
        t.check(backup.length === 10, `${backup.length} backup codes shown`);
        const enabled = await t.api('GET', '/api/users/@me/two_factor_status/');
        t.check(enabled.is_enabled && enabled.backup_codes_remaining === 10, `the API's 2FA status: ${JSON.stringify(enabled)}`);
        await t.shoot('2fa-backup-codes');
        await twoFactor.getByRole('button', { name: 'I have saved them' }).click();
        await twoFactor.locator('#two-factor-status', { hasText: 'Enabled' }).waitFor();
        t.check((await twoFactor.locator('#backup-codes-remaining').textContent()).startsWith('10 '), 'the page does not say 10 codes are left');
        // Back off, with a backup code (as it was before this check).
        await twoFactor.getByRole('button', { name: 'Disable 2FA' }).click();
        const disable = page.getByRole('dialog', { name: 'Disable two-factor authentication' });
        await disable.locator('input[name="disable-token"]').fill(backup[0]);
        await disable.getByRole('button', { name: 'Disable 2FA' }).click();
        await twoFactor.locator('#two-factor-status', { hasText: 'Off' }).waitFor();
        const off = await t.api('GET', '/api/users/@me/two_factor_status/');
        t.check(!off.is_enabled, '2FA is still on after disabling it on the page');
    } else {
        await twoFactor.locator('#two-factor-status', { hasText: 'Enabled' }).waitFor();
        const remaining = await twoFactor.locator('#backup-codes-remaining').textContent();
        t.check(remaining.startsWith(`${status.backup_codes_remaining} `), `the page says "${remaining}", the API ${status.backup_codes_remaining} codes`);
        await twoFactor.getByRole('button', { name: 'Regenerate backup codes' }).click();
        const codes = twoFactor.locator('.backup-code-list li');
        await codes.first().waitFor();
        const backup = await codes.allTextContents();
        t.check(backup.length === 10 && new Set(backup).size === 10, `${backup.length} backup codes shown`);
        const after = await t.api('GET', '/api/users/@me/two_factor_status/');
        t.check(after.is_enabled && after.backup_codes_remaining === 10, `the API's 2FA status: ${JSON.stringify(after)}`);
        await t.shoot('2fa-backup-codes');
        await twoFactor.getByRole('button', { name: 'I have saved them' }).click();
        await twoFactor.locator('#backup-codes-remaining', { hasText: '10 backup codes left.' }).waitFor();
    }
    await t.shoot('done');

    await page.setViewportSize(t.PHONE);
    await page.waitForTimeout(200);
    t.check((await t.overflow()) <= 0, `the settings page is ${await t.overflow()} px too wide on a phone`);
    await t.shoot('phone');
    await page.setViewportSize(t.WIDE);

    // The project as it was (name and time zone), for whatever runs next.
    await t.api('PATCH', projectPath, { name: before.name, timezone: before.timezone });
}
