// Feature flags: a multivariate flag with payloads and a release condition made through the page
// (what the API stores must be what was typed), the API's 400 for variants not summing to 100
// shown under them, the active switch in the list (checked through the API), and "what does a
// user get" answering what the SDKs' route answers from Node for a matching and a non-matching id.

const FLAGS_ROUTE = '/flags/?v=2';

export default async function (t) {
    const { page } = t;
    const suffix = Date.now().toString(36);
    const key = `console-flag-${suffix}`;
    const description = 'Checkout colour, made by the console check';

    // A person-property cohort for a second condition set.
    const cohort = await t.api('POST', `/api/projects/${t.projectId}/cohorts/`, {
        name: `Console VIPs ${suffix}`,
        filters: { properties: { type: 'AND', values: [{ type: 'AND', values: [{ key: 'plan', type: 'person', operator: 'exact', value: ['vip'] }] }] } },
    });

    await t.open('/feature_flags');
    await page.getByRole('heading', { name: 'Feature flags' }).waitFor();
    await page.locator('.flags .loading').waitFor({ state: 'detached' });
    await t.shoot('list');

    // A new flag through the form.
    await page.getByRole('button', { name: 'New flag' }).click();
    await page.getByRole('heading', { name: 'New feature flag' }).waitFor();
    await page.locator('input[name=key]').fill(key);
    await page.locator('textarea[name=name]').fill(description);
    await page.getByRole('button', { name: 'Add condition', exact: true }).click();
    await page.getByLabel('Set 1 condition 1 property').fill('plan');
    await page.getByLabel('Set 1 condition 1 operator').selectOption('exact');
    await page.getByLabel('Set 1 condition 1 value').fill('pro, enterprise');
    await page.getByLabel('Set 1 rollout percentage').fill('100');
    await page.getByRole('button', { name: 'Add condition set' }).click();
    await page.locator('[data-group="2"]').getByRole('button', { name: 'Add condition', exact: true }).click();
    await page.getByLabel('Set 2 condition 1 type').selectOption('cohort');
    await page.getByLabel('Set 2 condition 1 cohort').selectOption(String(cohort.id));
    await page.getByLabel('Set 2 rollout percentage').fill('100');
    await page.getByLabel('Multiple variants').check();
    await page.getByLabel('Variant 1 key').fill('control');
    await page.getByLabel('Variant 1 payload').fill('{"color": "grey"}');
    await page.getByLabel('Variant 2 key').fill('test');
    await page.getByLabel('Variant 2 payload').fill('{"color": "blue", "size": 2}');

    // Variants that do not sum to 100: the API's own message, under the variants.
    await page.getByLabel('Variant 1 rollout percentage').fill('50');
    await page.getByLabel('Variant 2 rollout percentage').fill('40');
    await page.getByRole('button', { name: 'Create flag' }).click();
    const variantsError = page.locator('#variants-error');
    await variantsError.waitFor();
    const bad = await fetch(`${t.server}/api/projects/${t.projectId}/feature_flags/`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${process.env.ANALYTICS_KEY}`, 'Content-Type': 'application/json' },
        body: JSON.stringify({
            key: `${key}-bad`,
            filters: {
                groups: [{ properties: [], rollout_percentage: 100 }],
                multivariate: { variants: [{ key: 'control', rollout_percentage: 50 }, { key: 'test', rollout_percentage: 40 }] },
            },
        }),
    });
    const badBody = await bad.json();
    t.check(bad.status === 400, `a bad rollout answered ${bad.status}`);
    t.check((await variantsError.textContent()).trim() === badBody.detail, `bad rollout: page says "${await variantsError.textContent()}", API "${badBody.detail}"`);
    await t.shoot('bad-rollout');

    // Fixed: created, and the page moves to the flag.
    await page.getByLabel('Variant 2 rollout percentage').fill('50');
    await page.getByRole('button', { name: 'Create flag' }).click();
    await page.getByRole('heading', { name: key }).waitFor();
    const id = Number(new URL(page.url()).pathname.split('/').pop());
    t.check(Number.isInteger(id) && id > 0, `no flag id in ${page.url()}`);
    const stored = await t.api('GET', `/api/projects/${t.projectId}/feature_flags/${id}/`);
    t.check(stored.key === key && stored.name === description && stored.active === true, `stored flag: ${JSON.stringify(stored)}`);
    const group = stored.filters.groups[0];
    t.check(stored.filters.groups.length === 2 && Number(group.rollout_percentage) === 100, `groups: ${JSON.stringify(stored.filters.groups)}`);
    const cohortCondition = stored.filters.groups[1].properties;
    t.check(
        cohortCondition.length === 1 && cohortCondition[0].type === 'cohort' && Number(cohortCondition[0].value) === cohort.id && Number(stored.filters.groups[1].rollout_percentage) === 100,
        `cohort condition: ${JSON.stringify(stored.filters.groups[1])}`,
    );
    const condition = group.properties[0];
    t.check(
        group.properties.length === 1 && condition.key === 'plan' && condition.type === 'person' && condition.operator === 'exact' &&
            JSON.stringify(condition.value) === JSON.stringify(['pro', 'enterprise']),
        `condition: ${JSON.stringify(group.properties)}`,
    );
    const variants = stored.filters.multivariate.variants.map((variant) => [variant.key, Number(variant.rollout_percentage)]);
    t.check(JSON.stringify(variants) === JSON.stringify([['control', 50], ['test', 50]]), `variants: ${JSON.stringify(variants)}`);
    const payloads = stored.filters.payloads;
    t.check(
        JSON.stringify(JSON.parse(payloads.control)) === JSON.stringify({ color: 'grey' }) &&
            JSON.stringify(JSON.parse(payloads.test)) === JSON.stringify({ color: 'blue', size: 2 }),
        `payloads: ${JSON.stringify(payloads)}`,
    );
    await t.shoot('created');

    // Editing: a new description saved through the page lands in the API.
    await page.locator('textarea[name=name]').fill(`${description} (edited)`);
    await page.getByRole('button', { name: 'Save', exact: true }).click();
    await page.getByRole('status').filter({ hasText: 'Saved.' }).waitFor();
    const edited = await t.api('GET', `/api/projects/${t.projectId}/feature_flags/${id}/`);
    t.check(edited.name === `${description} (edited)` && edited.version > stored.version, `edit: ${edited.name} v${edited.version}`);

    // The active switch in the list, off then on, each checked through the API.
    await t.open(`/feature_flags?search=${encodeURIComponent(key)}`);
    const row = page.locator(`tr[data-flag-key="${key}"]`);
    await row.waitFor();
    const toggle = row.getByRole('switch', { name: `Active ${key}` });
    for (const want of [false, true]) {
        await toggle.click();
        // The label follows the list as reloaded from the API after the write.
        await row.locator('.switch-text', { hasText: want ? 'On' : 'Off' }).waitFor();
        t.check((await toggle.isChecked()) === want, `the switch shows ${!want} after the API answered ${want}`);
        const now = await t.api('GET', `/api/projects/${t.projectId}/feature_flags/${id}/`);
        t.check(now.active === want, `after the switch the API says active=${now.active}, expected ${want}`);
        await t.shoot(want ? 'list-on' : 'list-off');
    }
    // The active filter keeps to the API's answer too.
    await page.getByLabel('Status').selectOption('false');
    await row.waitFor({ state: 'detached', timeout: 5000 }).catch(() => {
        throw new Error('an active flag is listed under "Inactive"');
    });
    const inactive = await t.api('GET', `/api/projects/${t.projectId}/feature_flags/?active=false&limit=100`);
    const listed = await page.locator('tr[data-flag-key]').evaluateAll((rows) => rows.map((one) => one.dataset.flagKey));
    t.check(JSON.stringify(listed) === JSON.stringify(inactive.results.map((flag) => flag.key).filter((one) => one === key)), `inactive list on screen ${listed}`);
    await page.getByLabel('Status').selectOption('true');
    await row.waitFor();

    // What a user gets: the page's answer equals the SDKs' route called from here.
    await t.open(`/feature_flags/${id}`);
    await page.getByRole('heading', { name: 'What does a user get?' }).waitFor();
    const people = [
        { id: `flag-pro-${suffix}`, properties: { plan: 'pro' } },
        { id: `flag-free-${suffix}`, properties: { plan: 'free' } },
        { id: `flag-vip-${suffix}`, properties: { plan: 'vip' } },
    ];
    const values = [];
    for (const person of people) {
        const response = await fetch(`${t.server}${FLAGS_ROUTE}`, {
            method: 'POST',
            headers: { 'Content-Type': 'application/json' },
            body: JSON.stringify({ api_key: t.token, distinct_id: person.id, person_properties: person.properties }),
        });
        const sdk = (await response.json()).flags[key];
        const expectedValue = sdk.enabled ? (sdk.variant ?? 'true') : 'false';
        const expectedPayload = sdk.metadata?.payload ?? null;
        await page.locator('input[name=distinct_id]').fill(person.id);
        await page.locator('textarea[name=person_properties]').fill(JSON.stringify(person.properties));
        await page.getByRole('button', { name: 'Evaluate' }).click();
        await page.locator('.evaluation-id', { hasText: person.id }).waitFor();
        const shownValue = (await page.locator('.evaluation-value').textContent()).trim();
        const shownPayload = (await page.locator('.evaluation-payload').textContent()).trim();
        t.check(shownValue === expectedValue, `${person.id}: page shows ${shownValue}, /flags says ${expectedValue}`);
        t.check(
            expectedPayload === null ? shownPayload === 'none' : shownPayload === (typeof expectedPayload === 'string' ? expectedPayload : JSON.stringify(expectedPayload)),
            `${person.id}: payload on the page ${shownPayload}, /flags ${JSON.stringify(expectedPayload)}`,
        );
        values.push(expectedValue);
        await t.shoot(`user-${person.properties.plan}`);
    }
    t.check(['control', 'test'].includes(values[0]) && values[1] === 'false' && ['control', 'test'].includes(values[2]), `users got ${values}`);

    // Pages: 21 flags of one prefix are 20 on the first page and 1 on the next, as the API pages them.
    const prefix = `console-page-${suffix}`;
    for (let index = 0; index < 21; index += 1) {
        await t.api('POST', `/api/projects/${t.projectId}/feature_flags/`, {
            key: `${prefix}-${String(index).padStart(2, '0')}`,
            active: false,
            filters: { groups: [{ properties: [], rollout_percentage: 0 }] },
        });
    }
    await t.open(`/feature_flags?search=${prefix}`);
    await page.locator('tr[data-flag-key]').nth(19).waitFor();
    const firstPage = await page.locator('tr[data-flag-key]').evaluateAll((rows) => rows.map((one) => one.dataset.flagKey));
    const apiFirst = await t.api('GET', `/api/projects/${t.projectId}/feature_flags/?search=${prefix}&limit=20&offset=0`);
    t.check(JSON.stringify(firstPage) === JSON.stringify(apiFirst.results.map((flag) => flag.key)), `first page ${firstPage.length} rows, not the API's`);
    await page.getByRole('navigation', { name: 'Pages' }).getByRole('button', { name: 'Next' }).click();
    await page.waitForFunction(() => document.querySelectorAll('tr[data-flag-key]').length === 1);
    const apiSecond = await t.api('GET', `/api/projects/${t.projectId}/feature_flags/?search=${prefix}&limit=20&offset=20`);
    const secondPage = await page.locator('tr[data-flag-key]').evaluateAll((rows) => rows.map((one) => one.dataset.flagKey));
    t.check(JSON.stringify(secondPage) === JSON.stringify(apiSecond.results.map((flag) => flag.key)), `second page ${secondPage}, API ${apiSecond.results.map((flag) => flag.key)}`);
    await t.shoot('second-page');

    // Fits a phone.
    await page.setViewportSize(t.PHONE);
    t.check((await t.overflow()) <= 0, 'the flag page is wider than a phone');
    await t.shoot('phone-flag');
    await t.open('/feature_flags');
    await page.locator('tr[data-flag-key]').first().waitFor();
    t.check((await t.overflow()) <= 0, 'the flag list is wider than a phone');
    await t.shoot('phone-list');
    await page.setViewportSize(t.WIDE);

    // Delete, through the dialog: the API no longer serves it.
    await t.open(`/feature_flags/${id}`);
    await page.getByRole('button', { name: 'Delete', exact: true }).click();
    await page.getByRole('dialog', { name: 'Delete this flag?' }).getByRole('button', { name: 'Delete flag' }).click();
    await page.getByRole('heading', { name: 'Feature flags' }).waitFor();
    const gone = await fetch(`${t.server}/api/projects/${t.projectId}/feature_flags/${id}/`, { headers: { Authorization: `Bearer ${process.env.ANALYTICS_KEY}` } });
    t.check(gone.status === 404 || (await gone.json()).deleted === true, `after delete the flag answers ${gone.status}`);
    const remaining = await t.api('GET', `/api/projects/${t.projectId}/feature_flags/?search=${encodeURIComponent(key)}`);
    t.check(remaining.results.length === 0, 'a deleted flag is still listed');
    t.check((await page.locator(`tr[data-flag-key="${key}"]`).count()) === 0, 'a deleted flag is still on the page');
    await t.shoot('deleted');
}
