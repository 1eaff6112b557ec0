// SQL: a query typed with the suggestions (a table, a column, a function and a captured property
// key), run, its table equal to the API's answer to the same HogQL; the bar chart's numbers; an
// error in the API's words; a slow query cancelled; the query kept in the address over a reload;
// saved as an insight that the API then holds with its name and query; a phone's width.

export default async function (t) {
    const { page } = t;
    const tag = Date.now().toString(36);
    const prefix = `sqlcheck_${tag}_`;
    const key = `sqlplan${tag}`;
    const events = [];
    const add = (event, plan, count) => {
        for (let index = 0; index < count; index += 1) {
            events.push({ event: `${prefix}${event}`, distinct_id: `sql-${tag}-${index}`, properties: { [key]: plan } });
        }
    };
    add('open', 'pro', 3);
    add('click', 'free', 2);
    add('buy', 'pro', 1);
    await t.capture(events, undefined);
    const projectPath = `/api/projects/${t.projectId}`;
    const hogql = (query) => t.api('POST', `${projectPath}/query/`, { query: { kind: 'HogQLQuery', query }, refresh: 'force_blocking' });
    // Wait for our own events, and for ingestion to know the property key.
    const deadline = Date.now() + 30000;
    for (;;) {
        const landed = (await hogql(`SELECT count() FROM events WHERE event LIKE '${prefix}%'`)).results[0][0];
        const known = (await t.api('GET', `${projectPath}/property_definitions/?type=event&search=${key}`)).results;
        if (landed >= events.length && known.some((one) => one.name === key)) break;
        if (Date.now() > deadline) throw new Error(`${landed} of ${events.length} events landed, key known: ${known.length}`);
        await new Promise((resolve) => setTimeout(resolve, 250));
    }

    await t.open('/sql');
    const editor = page.getByLabel('SQL query');
    await editor.waitFor();
    await editor.fill('');
    const list = page.getByRole('listbox', { name: 'Suggestions' });
    /** Types `text`, waits for the list of suggestions for its last word (`data-prefix`), and
     * moves to the suggestion `label` of `kind` with the arrows (accepted by the caller). */
    async function complete(text, label, kind) {
        await editor.pressSequentially(text);
        const word = /[A-Za-z_$][\w$]*$/.exec(text)[0];
        const option = list.locator(`li[data-kind="${kind}"]`).filter({ has: page.locator('.sql-suggestion-label', { hasText: new RegExp(`^${label.replace(/[$]/g, '\\$')}$`) }) });
        await page.locator(`.sql-suggestions[data-prefix="${word}"]`).waitFor();
        await option.first().waitFor();
        // Keyboard only: the arrows down to it, then Enter or Tab.
        const labels = await list.locator('li .sql-suggestion-label').allTextContents();
        t.check(labels.includes(label), `no suggestion ${label} in ${JSON.stringify(labels)}`);
        const active = list.locator('li[aria-selected="true"] .sql-suggestion-label');
        for (let step = 0; (await active.textContent()) !== label; step += 1) {
            t.check(step < labels.length, `ArrowDown never reached ${label} in ${JSON.stringify(labels)}`);
            await editor.press('ArrowDown');
        }
    }
    await complete('SELECT ev', 'event', 'column');
    await editor.press('Enter');
    await list.waitFor({ state: 'detached' });
    await complete(', coun', 'count', 'function');
    await editor.press('Tab');
    // The caret is inside count(): End leaves it (and closes any list).
    await editor.press('End');
    await complete(', properties.sqlp', key, 'property');
    await t.shoot('suggestions');
    await editor.press('Enter');
    await editor.press('Escape');
    await editor.press('Enter');
    await complete('FROM ev', 'events', 'table');
    await editor.press('Enter');
    await list.waitFor({ state: 'detached' });
    // Escape closes the list without touching the text.
    await editor.pressSequentially(' WH');
    await list.waitFor();
    await editor.press('Escape');
    await list.waitFor({ state: 'detached' });
    await editor.pressSequentially(`ERE event LIKE '${prefix}%' GROUP BY event, properties.${key} ORDER BY event`);
    await editor.press('Escape');
    const query = `SELECT event, count(), properties.${key}\nFROM events WHERE event LIKE '${prefix}%' GROUP BY event, properties.${key} ORDER BY event`;
    const typed = await editor.inputValue();
    t.check(typed === query, `the editor holds ${JSON.stringify(typed)}`);

    // Ctrl+Enter runs it; the table is the API's answer.
    await editor.press('Control+Enter');
    const table = page.locator('.sql-table');
    await table.waitFor();
    const expected = await hogql(query);
    const headers = await table.locator('thead th').allTextContents();
    t.check(JSON.stringify(headers) === JSON.stringify(expected.columns), `columns ${JSON.stringify(headers)} vs ${JSON.stringify(expected.columns)}`);
    const cells = await table.locator('tbody tr').evaluateAll((rows) => rows.map((row) => [...row.querySelectorAll('td')].map((cell) => cell.textContent)));
    const apiCells = expected.results.map((row) => row.map((value) => (value === null ? 'null' : String(value))));
    t.check(JSON.stringify(cells) === JSON.stringify(apiCells), `table ${JSON.stringify(cells)} vs API ${JSON.stringify(apiCells)}`);
    t.check(apiCells.length === 3 && apiCells[0][0] === `${prefix}buy` && apiCells[0][1] === '1', `the API answered ${JSON.stringify(apiCells)}`);
    await t.shoot('table');

    // The address keeps the query: a reload shows it again.
    await page.waitForFunction((text) => new URL(window.location.href).searchParams.get('q') === text, query);
    await page.reload();
    await editor.waitFor();
    t.check((await editor.inputValue()) === query, 'a reload keeps the query');
    await page.getByRole('button', { name: 'Run', exact: true }).click();
    await table.waitFor();

    // The bar chart: the first column as x, count() as the series.
    await page.getByRole('group', { name: 'Show as' }).getByRole('button', { name: 'Bar' }).click();
    const chartRows = await page.locator('#sql-chart .chart-table tbody tr').evaluateAll((rows) =>
        rows.map((row) => [row.querySelector('th').textContent, ...[...row.querySelectorAll('td data')].map((data) => Number(data.value))]),
    );
    const apiBars = expected.results.map((row) => [row[0], row[1]]);
    t.check(JSON.stringify(chartRows) === JSON.stringify(apiBars), `bars ${JSON.stringify(chartRows)} vs API ${JSON.stringify(apiBars)}`);
    t.check((await page.locator('#sql-chart .chart-table thead th').allTextContents()).includes('count()'), 'the series is count()');
    t.check(new URL(page.url()).searchParams.get('view') === 'bar', 'the view is in the address');
    await t.shoot('bar');
    // The big number is the first cell.
    await page.getByRole('group', { name: 'Show as' }).getByRole('button', { name: 'Number' }).click();
    t.check((await page.locator('.sql-big-number data').getAttribute('value')) === String(expected.results[0][0]), 'the number is the first cell');
    await page.getByRole('group', { name: 'Show as' }).getByRole('button', { name: 'Bar' }).click();

    // An error, in the API's words.
    const wrong = 'SELECT evnt FROM events';
    let apiError = '';
    try {
        await hogql(wrong);
    } catch (error) {
        apiError = JSON.parse(error.message.slice(error.message.indexOf('{'))).detail;
    }
    t.check(apiError.includes('evnt'), `the API's error: ${apiError}`);
    await editor.fill(wrong);
    await editor.press('Control+Enter');
    const alert = page.locator('.sql-panel [role="alert"]');
    await alert.waitFor();
    t.check((await alert.textContent()) === apiError, `the page says ${await alert.textContent()}, the API ${apiError}`);
    await t.shoot('error');

    // A slow query, cancelled: the Cancel button stops it on the server and leaves no error.
    const slow = `SELECT sum(cityHash64(toString(number + ${Date.now() % 100000}))) FROM numbers(10000000)`;
    await editor.fill(slow);
    await page.getByRole('button', { name: 'Run', exact: true }).click();
    const cancel = page.getByRole('button', { name: 'Cancel', exact: true });
    await cancel.waitFor();
    await page.locator('.sql-progress').waitFor();
    // The rows read so far, when the server has told them (no failure if it is faster).
    await page.locator('.sql-progress', { hasText: 'rows read' }).waitFor({ timeout: 4000 }).catch(() => {});
    await t.shoot('running');
    let clicked = true;
    await cancel.click({ timeout: 3000 }).catch(() => {
        clicked = false;
    });
    const status = page.locator('.sql-status');
    if (clicked) {
        await page.getByText('The query was cancelled.').waitFor();
        t.check((await alert.count()) === 0, 'cancelling leaves no error');
    } else {
        // It ended before the click (a fast machine): it must have ended well.
        await status.getByText(/Done in/).waitFor();
    }
    await cancel.waitFor({ state: 'detached' });
    await t.shoot('cancelled');

    // Saved as an insight: the API holds the name and the query.
    await editor.fill(query);
    await editor.press('Control+Enter');
    await table.or(page.locator('#sql-chart')).first().waitFor();
    await page.getByRole('button', { name: 'Save as insight' }).click();
    const dialog = page.getByRole('dialog', { name: 'Save as insight' });
    const name = `SQL check ${tag}`;
    await dialog.getByLabel('Name').fill(name);
    await dialog.getByRole('button', { name: 'Save', exact: true }).click();
    const link = page.locator('#sql-saved-link');
    await link.waitFor();
    const href = await link.getAttribute('href');
    const id = /^\/insights\/(\d+)$/.exec(href)?.[1];
    t.check(id, `the saved link is ${href}`);
    const insight = await t.api('GET', `${projectPath}/insights/${id}/`);
    t.check(insight.name === name, `the insight's name is ${insight.name}`);
    t.check(insight.query?.kind === 'DataVisualizationNode' && insight.query.source?.kind === 'HogQLQuery', `the insight's query is ${JSON.stringify(insight.query)}`);
    t.check(insight.query.source.query === query, `the insight's SQL is ${insight.query.source.query}`);
    t.check(insight.query.display === 'ActionsBar', `the insight's display is ${insight.query.display}`);
    await t.shoot('saved');
    // The link opens the saved insight, its result drawn by the SQL kind (kind.tsx): the same
    // table and bars as the API's answer.
    await link.click();
    await page.waitForURL((url) => url.pathname === href);
    const saved = page.locator('.sql-kind-result');
    await saved.waitFor();
    await saved.getByRole('group', { name: 'Show as' }).getByRole('button', { name: 'Table' }).click();
    const savedCells = await saved.locator('.sql-table tbody tr').evaluateAll((rows) => rows.map((row) => [...row.querySelectorAll('td')].map((cell) => cell.textContent)));
    t.check(JSON.stringify(savedCells) === JSON.stringify(apiCells), `the insight's table ${JSON.stringify(savedCells)} vs API ${JSON.stringify(apiCells)}`);
    await saved.getByRole('group', { name: 'Show as' }).getByRole('button', { name: 'Bar' }).click();
    const savedBars = await saved.locator('.chart-table tbody tr').evaluateAll((rows) =>
        rows.map((row) => [row.querySelector('th').textContent, ...[...row.querySelectorAll('td data')].map((data) => Number(data.value))]),
    );
    t.check(JSON.stringify(savedBars) === JSON.stringify(apiBars), `the insight's bars ${JSON.stringify(savedBars)} vs API ${JSON.stringify(apiBars)}`);
    await t.shoot('insight');
    await t.open(`/sql?q=${encodeURIComponent(query)}`);
    await editor.waitFor();
    t.check((await editor.inputValue()) === query, 'a link to /sql?q= opens the query');
    await page.getByRole('button', { name: 'Run', exact: true }).click();
    await table.or(page.locator('#sql-chart')).first().waitFor();

    // A phone: nothing wider than the screen, the table scrolls in its box.
    await page.getByRole('group', { name: 'Show as' }).getByRole('button', { name: 'Table' }).click();
    await page.setViewportSize(t.PHONE);
    await editor.click();
    await editor.press('Control+End');
    await editor.pressSequentially(' LIMIT co');
    await list.waitFor();
    t.check((await t.overflow()) <= 0, `SQL is ${await t.overflow()} px too wide at 390 px`);
    await t.shoot('phone');
    await editor.press('Escape');
}
