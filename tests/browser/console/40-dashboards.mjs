// Dashboards: one made through the page, a trend and a funnel put on it from their insight pages,
// its tiles' numbers equal to the API's answer for each tile, the dashboard's date filter
// narrowing them as the API says, Refresh, removal and rename, and the page at 390 px. The kinds'
// components are read only through their contract (the numbers they show as `<data value>`, or
// the JSON a kind that is not built yet prints).

const DAY = 86400000;

async function waitForEvents(t, names, count) {
    const deadline = Date.now() + 30000;
    const list = names.map((name) => `'${name}'`).join(', ');
    for (;;) {
        const answer = await t.api('POST', `/api/projects/${t.projectId}/query/`, {
            query: { kind: 'HogQLQuery', query: `SELECT count() FROM events WHERE event IN (${list})` },
            refresh: 'force_blocking',
        });
        if (answer.results[0][0] >= count) return;
        if (Date.now() > deadline) throw new Error(`${answer.results[0][0]} of ${count} events landed`);
        await new Promise((resolve) => setTimeout(resolve, 300));
    }
}

/** The numbers a tile shows: its `<data value>`s, else the numbers of the JSON it prints. */
async function shownNumbers(tile) {
    return tile.locator('.insight-answer').evaluate((element) => {
        const values = [...element.querySelectorAll('data[value]')].map((data) => Number(data.getAttribute('value')));
        if (values.length) return values;
        const numbers = [];
        const walk = (value) => {
            if (typeof value === 'number') numbers.push(value);
            else if (Array.isArray(value)) value.forEach(walk);
            else if (value && typeof value === 'object') for (const [key, inner] of Object.entries(value)) if (key === 'data' || key === 'count') walk(inner);
        };
        const text = element.querySelector('pre')?.textContent;
        if (text) walk(JSON.parse(text));
        return numbers;
    });
}

function includesAll(shown, expected) {
    const left = [...shown];
    for (const value of expected) {
        const at = left.findIndex((one) => Math.abs(one - value) < 1e-9);
        if (at < 0) return false;
        left.splice(at, 1);
    }
    return true;
}

/** The numbers the API answers for an insight on a dashboard (its filters laid over it). */
function apiNumbers(insight) {
    const result = insight.result ?? [];
    if (insight.query.source.kind === 'TrendsQuery') return result.flatMap((series) => series.data);
    // A funnel: its steps' counts (a list of steps, or a list of lists with breakdowns).
    return result.flat().map((step) => step.count);
}

async function waitIdle(page) {
    await page.waitForFunction(() => document.querySelector('.dashboard-page')?.getAttribute('aria-busy') === 'false');
}

export default async function (t) {
    const { page, projectId } = t;
    const run = Date.now().toString(36);
    const viewed = `e2e_dash_view_${run}`;
    const signup = `e2e_dash_signup_${run}`;
    const now = Date.now();
    const at = (days, minutes = 0) => new Date(now - days * DAY - (60 + minutes) * 60000).toISOString();
    const batch = [];
    // Four persons view, three of them sign up later; two of the four did so three weeks ago.
    for (const [index, days] of [[0, 1], [1, 2], [2, 20], [3, 22]]) {
        const who = `dash-${index}-${run}`;
        batch.push({ event: viewed, distinct_id: who, timestamp: at(days, 30), properties: { $browser: index % 2 ? 'Chrome' : 'Firefox' } });
        if (index < 3) batch.push({ event: signup, distinct_id: who, timestamp: at(days, 10), properties: { $browser: index % 2 ? 'Chrome' : 'Firefox' } });
    }
    await t.capture(batch, undefined);
    await waitForEvents(t, [viewed, signup], batch.length);

    // The trend the insights check saved, else one of this check's own (made through the API).
    const found = await t.api('GET', `/api/projects/${projectId}/insights/?saved=true&search=E2E%20trend&basic=true`);
    let trend = found.results.find((insight) => insight.query?.source?.kind === 'TrendsQuery');
    if (!trend) {
        trend = await t.api('POST', `/api/projects/${projectId}/insights/`, {
            name: `E2E trend ${run}`,
            saved: true,
            query: { kind: 'InsightVizNode', source: { kind: 'TrendsQuery', series: [{ kind: 'EventsNode', event: viewed, math: 'total' }], interval: 'day', dateRange: { date_from: '-30d' } } },
        });
    }
    const funnel = await t.api('POST', `/api/projects/${projectId}/insights/`, {
        name: `E2E funnel ${run}`,
        saved: true,
        query: {
            kind: 'InsightVizNode',
            source: {
                kind: 'FunnelsQuery',
                series: [{ kind: 'EventsNode', event: viewed }, { kind: 'EventsNode', event: signup }],
                dateRange: { date_from: '-30d' },
                funnelsFilter: { funnelOrderType: 'ordered', funnelWindowInterval: 14, funnelWindowIntervalUnit: 'day' },
            },
        },
    });

    // A dashboard made through the page.
    const title = `E2E dashboard ${run}`;
    await t.open('/dashboards');
    await page.getByRole('heading', { name: 'Dashboards', level: 1 }).waitFor();
    await page.getByRole('button', { name: 'New dashboard' }).click();
    const form = page.getByRole('dialog', { name: 'New dashboard' });
    await form.getByLabel('Name').fill(title);
    await form.getByLabel('Description').fill('A trend and a funnel');
    await t.shoot('new');
    await form.getByRole('button', { name: 'Create' }).click();
    await page.waitForURL(/\/dashboards\/\d+$/);
    const dashboardId = Number(page.url().split('/').pop());
    await page.getByRole('heading', { name: title, level: 1 }).waitFor();
    const created = await t.api('GET', `/api/projects/${projectId}/dashboards/${dashboardId}/`);
    t.check(created.name === title && created.description === 'A trend and a funnel', `the dashboard stored: ${created.name}`);
    await t.shoot('empty');

    // Both insights put on it from their pages.
    for (const insight of [trend, funnel]) {
        await t.open(`/insights/${insight.short_id}`);
        await page.locator(`.insight-page[data-insight-id="${insight.id}"]`).waitFor();
        await page.getByRole('button', { name: 'Add to dashboard' }).click();
        const dialog = page.getByRole('dialog', { name: 'Add to dashboard' });
        await dialog.getByLabel('Find a dashboard').fill(run);
        const choice = dialog.locator(`li[data-dashboard-id="${dashboardId}"]`);
        await choice.getByRole('button', { name: 'Add' }).click();
        await choice.getByRole('button', { name: 'Remove' }).waitFor();
        if (insight === funnel) await t.shoot('add-to-dashboard');
        await dialog.getByRole('button', { name: 'Close' }).click();
        await page.locator('.insight-dashboards').getByRole('link', { name: title }).waitFor();
        const stored = await t.api('GET', `/api/projects/${projectId}/insights/${insight.id}/`);
        t.check(stored.dashboards.includes(dashboardId), `insight ${insight.id} is on dashboards ${JSON.stringify(stored.dashboards)}`);
    }

    // The dashboard: two tiles, each showing the API's answer for it.
    await t.open(`/dashboards/${dashboardId}`);
    await waitIdle(page);
    const tiles = page.locator('.tile');
    await page.locator('.tile .insight-answer').nth(1).waitFor();
    t.check((await tiles.count()) === 2, `${await tiles.count()} tiles`);
    async function compareTiles(what) {
        const answered = await t.api('GET', `/api/projects/${projectId}/dashboards/${dashboardId}/?refresh=blocking`);
        for (const tile of answered.tiles.filter((one) => one.insight)) {
            const shown = await shownNumbers(page.locator(`.tile[data-tile-id="${tile.id}"]`));
            const expected = apiNumbers(tile.insight);
            t.check(expected.length > 0 && includesAll(shown, expected), `${what}: tile ${tile.insight.name} shows ${JSON.stringify(shown)}, the API ${JSON.stringify(expected)}`);
        }
        return answered;
    }
    const before = await compareTiles('unfiltered');
    const funnelTile = before.tiles.find((tile) => tile.insight.id === funnel.id);
    t.check(funnelTile.insight.result.flat()[0].count === 4, `the funnel's first step: ${JSON.stringify(funnelTile.insight.result)}`);
    // The tile's answer is the insight's own with the dashboard's filters (none yet).
    const alone = await t.api('GET', `/api/projects/${projectId}/insights/${funnel.id}/?refresh=blocking&from_dashboard=${dashboardId}`);
    t.check(JSON.stringify(alone.result) === JSON.stringify(funnelTile.insight.result), 'the funnel tile is the insight read from the dashboard');
    await t.shoot('tiles');

    // The persons behind a funnel step, from its tile, when the kind offers it.
    const step = page.locator(`.tile[data-insight-id="${funnel.id}"] .insight-answer button:not([disabled])`).first();
    if (await step.count()) {
        await step.click();
        const dialog = page.getByRole('dialog');
        await dialog.locator('.persons-list').waitFor();
        const listed = await dialog.locator('.person-row').count();
        t.check(listed === 4, `the first step's persons: ${listed}`);
        await t.shoot('tile-persons');
        await dialog.getByRole('button', { name: 'Close' }).click();
    }

    // The date filter: the last 7 days, saved on the dashboard, and the tiles as the API says.
    await page.getByLabel('Date range').selectOption('-7d');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await page.getByRole('button', { name: 'Clear filters' }).waitFor();
    await waitIdle(page);
    const filtered = await t.api('GET', `/api/projects/${projectId}/dashboards/${dashboardId}/`);
    t.check(filtered.filters.date_from === '-7d', `the saved filters: ${JSON.stringify(filtered.filters)}`);
    const after = await compareTiles('last 7 days');
    const narrowed = after.tiles.find((tile) => tile.insight.id === funnel.id).insight.result.flat();
    t.check(narrowed[0].count === 2 && narrowed[1].count === 2, `the funnel over 7 days: ${JSON.stringify(narrowed.map((s) => s.count))}`);
    await t.shoot('filtered');

    // A property filter too: Chrome only.
    await page.getByLabel('Event property').fill('$browser');
    await page.getByLabel('equals').fill('Chrome');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await page.locator('.filter-chips').waitFor();
    await waitIdle(page);
    const chrome = await compareTiles('Chrome, last 7 days');
    const chromeFunnel = chrome.tiles.find((tile) => tile.insight.id === funnel.id).insight.result.flat();
    t.check(chromeFunnel[0].count === 1, `the funnel for Chrome over 7 days: ${JSON.stringify(chromeFunnel.map((s) => s.count))}`);
    await t.shoot('property-filter');

    // Refresh recomputes every tile (the API's last_refresh moves) and shows the same answers.
    const refreshedBefore = (await t.api('GET', `/api/projects/${projectId}/dashboards/${dashboardId}/`)).last_refresh;
    await new Promise((resolve) => setTimeout(resolve, 1100));
    await page.getByRole('button', { name: 'Refresh' }).click();
    await page.getByRole('button', { name: 'Refresh', exact: true }).waitFor();
    await waitIdle(page);
    const refreshedAfter = (await t.api('GET', `/api/projects/${projectId}/dashboards/${dashboardId}/`)).last_refresh;
    t.check(refreshedAfter && refreshedAfter !== refreshedBefore, `last_refresh ${refreshedBefore} → ${refreshedAfter}`);
    await compareTiles('refreshed');
    await t.shoot('refreshed');

    // At 390 px: one column, nothing wider than the window.
    await page.setViewportSize(t.PHONE);
    await page.waitForTimeout(300);
    t.check((await t.overflow()) <= 0, 'the dashboard fits at 390 px');
    const boxes = await Promise.all([0, 1].map((index) => tiles.nth(index).boundingBox()));
    t.check(Math.abs(boxes[0].x - boxes[1].x) < 1 && boxes[0].y !== boxes[1].y, 'the tiles stack in one column');
    await t.shoot('phone');
    await page.setViewportSize(t.WIDE);

    // Clear the filters, rename, and remove the funnel's tile.
    await page.getByRole('button', { name: 'Clear filters' }).click();
    await page.getByRole('button', { name: 'Clear filters' }).waitFor({ state: 'detached' });
    await waitIdle(page);
    t.check(JSON.stringify((await t.api('GET', `/api/projects/${projectId}/dashboards/${dashboardId}/`)).filters) === '{}', 'the filters cleared');
    await compareTiles('cleared');
    const renamed = `${title} renamed`;
    await page.getByRole('button', { name: 'Rename', exact: true }).click();
    await page.locator('.dashboard-rename').getByLabel('Name').fill(renamed);
    await page.locator('.dashboard-rename').getByRole('button', { name: 'Save' }).click();
    await page.getByRole('heading', { name: renamed, level: 1 }).waitFor();
    t.check((await t.api('GET', `/api/projects/${projectId}/dashboards/${dashboardId}/`)).name === renamed, 'renamed');
    // A text tile.
    await page.getByRole('button', { name: 'Add text' }).click();
    await page.getByLabel('Text', { exact: true }).fill(`Notes for ${run}`);
    await page.getByRole('button', { name: 'Add to the dashboard' }).click();
    await page.locator('.tile-text', { hasText: `Notes for ${run}` }).waitFor();
    await waitIdle(page);
    const withText = await t.api('GET', `/api/projects/${projectId}/dashboards/${dashboardId}/`);
    t.check(withText.tiles.some((tile) => tile.text?.body === `Notes for ${run}`), 'the text tile is stored');
    await compareTiles('with a text tile');
    await t.shoot('text-tile');

    page.once('dialog', (dialog) => dialog.accept());
    await page.locator(`.tile[data-insight-id="${funnel.id}"] .tile-remove`).click();
    await page.locator(`.tile[data-insight-id="${funnel.id}"]`).waitFor({ state: 'detached' });
    const left = await t.api('GET', `/api/projects/${projectId}/insights/${funnel.id}/`);
    t.check(!left.dashboards.includes(dashboardId), `the funnel left the dashboard: ${JSON.stringify(left.dashboards)}`);
    await t.shoot('removed');

    // The funnel deleted from its page (soft: PATCH deleted, then the API answers 404).
    await t.open(`/insights/${funnel.short_id}`);
    await page.locator(`.insight-page[data-insight-id="${funnel.id}"]`).waitFor();
    page.once('dialog', (dialog) => dialog.accept());
    await page.getByRole('button', { name: 'Delete' }).click();
    await page.waitForURL(/\/insights$/);
    const gone = await fetch(`${t.server}/api/projects/${projectId}/insights/${funnel.id}/`, { headers: { Authorization: `Bearer ${process.env.ANALYTICS_KEY}` } });
    t.check(gone.status === 404, `the deleted funnel answers ${gone.status}`);

    // The list, searched.
    await t.open(`/dashboards?search=${run}`);
    await page.getByRole('link', { name: renamed }).waitFor();
    await page.setViewportSize(t.PHONE);
    t.check((await t.overflow()) <= 0, 'the list fits at 390 px');
    await t.shoot('list-phone');
    await page.setViewportSize(t.WIDE);
}
