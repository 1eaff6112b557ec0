// Endpoints: a bad name answered with the API's error; an endpoint with a variable made through
// the form; run on its page with a value, the table equal to the API's run; a changed query makes
// version 2, both listed and either shown; the materialization status as the API answers it.

export default async function (t) {
    const { page } = t;
    const base = `/api/projects/${t.projectId}/endpoints`;
    const stamp = Date.now();
    const name = `e2e_users_${stamp}`;
    const alpha = `ep-e2e-alpha-${stamp}`;
    const beta = `ep-e2e-beta-${stamp}`;

    // Events of our own: alpha by three persons (one twice), beta by one.
    const now = Date.now();
    const event = (kind, who, i) => ({ event: kind, distinct_id: who, timestamp: new Date(now - i * 1000).toISOString(), properties: {} });
    await t.capture([event(alpha, 'ep-u1', 1), event(alpha, 'ep-u1', 2), event(alpha, 'ep-u2', 3), event(alpha, 'ep-u3', 4), event(beta, 'ep-u4', 5)], undefined);
    const deadline = Date.now() + 20000;
    for (;;) {
        const counted = await t.api('POST', `/api/projects/${t.projectId}/query/`, {
            query: { kind: 'HogQLQuery', query: `SELECT count() FROM events WHERE event IN ('${alpha}', '${beta}')` },
            refresh: 'force_blocking',
        });
        if (counted.results[0][0] >= 5) break;
        if (Date.now() > deadline) throw new Error('the endpoint events did not land');
        await new Promise((resolve) => setTimeout(resolve, 200));
    }

    await t.open('/endpoints');
    await page.getByRole('heading', { name: 'Endpoints' }).waitFor();
    await page.locator('.ep-list, .panel .muted').first().waitFor();
    await t.shoot('list');

    // A bad name: the API's 400, at the name field.
    await page.getByRole('link', { name: 'New endpoint' }).click();
    await page.getByRole('heading', { name: 'New endpoint' }).waitFor();
    const bad = '9 bad name';
    await page.getByLabel('Name', { exact: false }).first().fill(bad);
    await page.getByLabel('HogQL query').fill('SELECT distinct_id, count() AS events\nFROM events\nWHERE event = {variables.event_name}\nGROUP BY distinct_id\nORDER BY distinct_id');
    await page.getByLabel('Variable 1 name').fill('event_name');
    await page.getByLabel('Variable 1 default').fill(beta);
    await page.getByRole('button', { name: 'Create endpoint' }).click();
    const shownError = page.locator('.ep-form .field.invalid .form-error');
    await shownError.waitFor();
    let apiError = '';
    try {
        await t.api('POST', `${base}/`, { name: bad, query: { kind: 'HogQLQuery', query: 'select 1' } });
    } catch (error) {
        apiError = JSON.parse(String(error.message).replace(/^[^{]*/, '')).detail;
    }
    const onScreen = (await shownError.textContent()) ?? '';
    t.check(apiError && onScreen === apiError, `the page shows the API's error: "${onScreen}" vs "${apiError}"`);
    await t.shoot('bad-name');

    // The endpoint, made.
    await page.getByLabel('Name', { exact: false }).first().fill(name);
    await page.getByLabel('Description').fill('Events per person for one event');
    await page.getByRole('button', { name: 'Create endpoint' }).click();
    await page.waitForURL(new RegExp(`/endpoints/${name}$`));
    await page.getByRole('heading', { name, exact: true }).waitFor();
    const made = await t.api('GET', `${base}/${name}/`);
    const variables = Object.values(made.query.variables ?? {});
    t.check(variables.length === 1 && variables[0].code_name === 'event_name' && variables[0].value === beta, `the variable is stored: ${JSON.stringify(made.query.variables)}`);
    t.check(made.current_version === 1, 'a new endpoint is version 1');

    // Run with a value on the page; the table equals the API's run.
    await page.getByLabel('event_name').fill(alpha);
    await page.getByRole('button', { name: 'Run', exact: true }).click();
    const table = page.locator('.ep-result-table');
    await table.waitFor();
    const ran = await t.api('POST', `${base}/${name}/run/`, { variables: { event_name: alpha } });
    const headers = await table.locator('thead th').allTextContents();
    t.check(JSON.stringify(headers) === JSON.stringify(ran.columns), `columns: page ${headers}, API ${ran.columns}`);
    const cells = await table.locator('tbody tr').evaluateAll((rows) => rows.map((row) => [...row.querySelectorAll('td')].map((td) => td.textContent)));
    const expected = ran.results.map((row) => row.map((cell) => (cell === null ? '' : typeof cell === 'object' ? JSON.stringify(cell) : String(cell))));
    t.check(JSON.stringify(cells) === JSON.stringify(expected), `rows: page ${JSON.stringify(cells)}, API ${JSON.stringify(expected)}`);
    t.check(expected.length === 3, `three persons did ${alpha} (${expected.length})`);
    await t.shoot('run');

    // A changed query: version 2; both versions listed; version 1 still shown on asking.
    await page.getByRole('button', { name: 'Change query' }).click();
    await page.getByLabel('HogQL query').fill('SELECT distinct_id, count() AS events\nFROM events\nWHERE event = {variables.event_name}\nGROUP BY distinct_id\nORDER BY events DESC, distinct_id');
    await page.getByRole('button', { name: 'Save as a new version' }).click();
    await page.locator('.ep-versions tr[data-version="2"]').waitFor();
    const versions = await t.api('GET', `${base}/${name}/versions/`);
    t.check(versions.length === 2 && versions[0].version === 2, `two versions, newest first (${versions.map((v) => v.version)})`);
    t.check(JSON.stringify(await page.locator('.ep-versions tbody tr').evaluateAll((rows) => rows.map((r) => Number(r.dataset.version)))) === '[2,1]', 'the page lists versions 2 and 1');
    await page.getByRole('heading', { name: 'Version 2 (current)' }).waitFor();
    await page.getByLabel('event_name').fill(alpha);
    await page.getByRole('button', { name: 'Run', exact: true }).click();
    await table.waitFor();
    const ran2 = await t.api('POST', `${base}/${name}/run/`, { variables: { event_name: alpha } });
    const first = await table.locator('tbody tr').first().locator('td').allTextContents();
    t.check(JSON.stringify(first) === JSON.stringify(ran2.results[0].map(String)), `version 2's first row: page ${first}, API ${ran2.results[0]}`);
    await t.shoot('version-2');
    await page.locator('.ep-versions tr[data-version="1"]').getByRole('button', { name: 'v1' }).click();
    await page.getByRole('heading', { name: 'Version 1', exact: true }).waitFor();
    t.check(new URL(page.url()).searchParams.get('version') === '1', 'the version is in the address');
    t.check(((await page.locator('.ep-sql-view').textContent()) ?? '') === versions[1].query.query, 'version 1 shows its own query');
    await t.shoot('version-1');
    await t.open(`/endpoints/${name}`);
    await page.getByRole('heading', { name: 'Version 2 (current)' }).waitFor();

    // The OpenAPI document the page links to, read with the page's own session.
    const openapi = await page.getByRole('link', { name: 'OpenAPI document' }).getAttribute('href');
    t.check(openapi === `${base}/${name}/openapi.json`, `the OpenAPI link: ${openapi}`);
    const document = await (await page.request.get(`${t.server}${openapi}`)).json();
    t.check(document.openapi?.startsWith('3.') && JSON.stringify(document).includes('event_name'), 'the OpenAPI document names the variable');

    // Materialization: the status as the API answers it, then turned on.
    const before = await t.api('GET', `${base}/${name}/materialization_status/`);
    await page.locator('[data-field="can_materialize"]').waitFor();
    t.check((await page.locator('[data-field="is_materialized"]').textContent()) === 'no', 'not materialized yet');
    t.check(((await page.locator('[data-field="can_materialize"]').textContent()) ?? '').startsWith(before.can_materialize ? 'yes' : 'no'), 'can_materialize as the API says');
    await page.getByRole('region', { name: 'Materialization' }).getByLabel('Sync every').selectOption('1hour');
    await page.getByRole('button', { name: 'Materialize' }).click();
    await page.locator('[data-field="status"]').waitFor();
    const after = await t.api('GET', `${base}/${name}/materialization_status/`);
    const shownStatus = await page.locator('[data-field="status"]').textContent();
    t.check(after.sync_frequency === '1hour' && (await page.locator('[data-field="sync_frequency"]').textContent()) === '1hour', 'the sync frequency as set');
    t.check(['Pending', 'Running', 'Completed', 'Failed', 'Unknown'].includes(shownStatus ?? ''), `a materialization status is shown (${shownStatus}; API ${after.status})`);
    await t.shoot('materialized');

    // The list: version, materialized, the last run as last_execution_times answers it.
    await t.open('/endpoints');
    const row = page.locator(`.ep-list tr[data-name="${name}"]`);
    await row.waitFor();
    const times = await t.api('POST', `${base}/last_execution_times/`, { names: [name] });
    const last = (times.query_status.results ?? []).find(([n]) => n === name)?.[1] ?? '';
    t.check(last && (await row.locator('[data-last-run]').getAttribute('data-last-run')) === last, `last run: API ${last}`);
    t.check((await row.locator('td.num').textContent()) === '2', 'the list shows version 2');
    await t.shoot('list-after');

    // A phone.
    await t.open(`/endpoints/${name}`);
    await page.getByRole('heading', { name: 'Version 2 (current)' }).waitFor();
    await page.setViewportSize(t.PHONE);
    await page.waitForTimeout(200);
    t.check((await t.overflow()) <= 0, `the endpoint page fits a phone (${await t.overflow()} px over)`);
    await t.shoot('phone');
    await page.setViewportSize(t.WIDE);
}
