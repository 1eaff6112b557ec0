// Insights: a trend made and saved through the page, stored as PostHog stores it, renamed in
// place, listed, its numbers equal to the API's for the same query, and the persons behind a
// number. The kinds' components are read only through their contract: the result's root
// (`#insight-result`, else the page's own `.insight-answer`) with its query in `data-query`, and the
// numbers it shows as `<data value>` (or, from a kind that prints JSON, that JSON).

const DAY = 86400000;

/** Events with distinct names: 5 in the last week, 2 about three weeks ago. */
function events(name, people) {
    const now = Date.now();
    const at = (days) => new Date(now - days * DAY - 60000).toISOString();
    const rows = [
        [people[0], 0], [people[0], 0], [people[1], 1], [people[2], 3], [people[1], 5],
        [people[0], 20], [people[2], 21],
    ];
    return rows.map(([who, days], index) => ({
        event: name,
        distinct_id: who,
        timestamp: at(days),
        properties: { plan: index % 2 ? 'pro' : 'free', $browser: 'Firefox' },
    }));
}

async function waitForEvents(t, name, count) {
    const deadline = Date.now() + 30000;
    for (;;) {
        const answer = await t.api('POST', `/api/projects/${t.projectId}/query/`, {
            query: { kind: 'HogQLQuery', query: `SELECT count() FROM events WHERE event = '${name}'` },
            refresh: 'force_blocking',
        });
        if (answer.results[0][0] >= count) return;
        if (Date.now() > deadline) throw new Error(`${answer.results[0][0]} of ${count} ${name} events landed`);
        await new Promise((resolve) => setTimeout(resolve, 300));
    }
}

/** The result's root element on the page, once it shows an answer for a query naming `needle`. */
async function resultFor(t, needle, scope = t.page) {
    const root = scope.locator('.insight-answer').filter({ has: t.page.locator('*') }).first();
    await t.page.waitForFunction(
        ([text]) => {
            const answer = document.querySelector('.insight-answer');
            const inner = answer?.querySelector('#insight-result');
            const query = (inner ?? answer)?.getAttribute('data-query') ?? '';
            const busy = document.querySelector('.insight-result-panel')?.getAttribute('aria-busy') === 'true';
            return query.includes(text) && !busy;
        },
        [needle],
    );
    return root;
}

/** The numbers a result shows: its `<data value>`s, else the numbers of the JSON it prints. */
async function shownNumbers(root) {
    return root.evaluate((element) => {
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

/** Every number of `expected` is among `shown` (as many times as it appears). */
function includesAll(shown, expected) {
    const left = [...shown];
    for (const value of expected) {
        const at = left.findIndex((one) => Math.abs(one - value) < 1e-9);
        if (at < 0) return false;
        left.splice(at, 1);
    }
    return true;
}

export default async function (t) {
    const { page, projectId } = t;
    const run = Date.now().toString(36);
    const name = `e2e_insight_${run}`;
    const people = [`ins-a-${run}`, `ins-b-${run}`, `ins-c-${run}`];
    await t.capture(events(name, people), undefined);
    await waitForEvents(t, name, 7);

    // The list, and the kind picker.
    await t.open('/insights');
    await page.getByRole('heading', { name: 'Insights', level: 1 }).waitFor();
    await page.getByRole('button', { name: 'New insight' }).click();
    await page.getByRole('dialog', { name: 'New insight' }).waitFor();
    await t.shoot('kind-picker');
    await page.getByRole('link', { name: 'Trends', exact: true }).click();
    await page.waitForURL(/\/insights\/new\?kind=TrendsQuery/);

    // The editor: the series' event and the dates, as a person picks them; else the query's JSON.
    const eventBox = page.getByLabel('Series 1 event');
    if (await eventBox.count()) {
        await eventBox.fill(name);
        await eventBox.press('Tab');
        const dates = page.locator('.insight-editor').getByLabel('Dates');
        if (await dates.count()) await dates.selectOption('-30d');
    } else {
        await page.locator('.query-json summary').click();
        await page.locator('#insight-query-json').fill(
            JSON.stringify({ kind: 'TrendsQuery', series: [{ kind: 'EventsNode', event: name, math: 'total' }], interval: 'day', dateRange: { date_from: '-30d' } }),
        );
        await page.getByRole('button', { name: 'Apply JSON' }).click();
    }
    const root = await resultFor(t, name);
    await page.waitForFunction(() => (document.querySelector('.insight-answer [id=insight-result], .insight-answer')?.getAttribute('data-query') ?? '').includes('-30d'));
    const query = JSON.parse(await page.locator('.insight-page').getAttribute('data-query'));
    t.check(query.kind === 'TrendsQuery' && query.series?.[0]?.event === name, `the editor's query: ${JSON.stringify(query)}`);
    await t.shoot('new-trend');

    // The numbers on screen are the API's for the same query.
    const answer = await t.api('POST', `/api/projects/${projectId}/query/`, { query, refresh: 'blocking' });
    const series = answer.results[0];
    t.check(series.count === 7, `the API counts ${series.count} of the 7 events`);
    const shown = await shownNumbers(await resultFor(t, '-30d'));
    t.check(includesAll(shown, series.data.filter((value) => value !== 0)), `the page shows ${JSON.stringify(shown)}, the API ${JSON.stringify(series.data)}`);
    void root;

    // Save it with a name: stored as PostHog stores it.
    const title = `E2E trend ${run}`;
    await page.locator('.insight-save').getByLabel('Name').fill(title);
    await page.getByRole('button', { name: 'Save', exact: true }).click();
    await page.waitForURL(/\/insights\/[A-Za-z0-9]+$/);
    await page.getByRole('heading', { name: title, level: 1 }).waitFor();
    const id = Number(await page.locator('.insight-page').getAttribute('data-insight-id'));
    const stored = await t.api('GET', `/api/projects/${projectId}/insights/${id}/`);
    t.check(stored.name === title, `the stored name: ${stored.name}`);
    t.check(stored.query.kind === 'InsightVizNode' && stored.query.source.kind === 'TrendsQuery', `the stored query: ${JSON.stringify(stored.query)}`);
    t.check(stored.query.source.series[0].event === name, `the stored series: ${JSON.stringify(stored.query.source.series)}`);
    const saved = await resultFor(t, name);
    const savedNumbers = await shownNumbers(saved);
    t.check(includesAll(savedNumbers, series.data.filter((value) => value !== 0)), `the saved insight shows ${JSON.stringify(savedNumbers)}`);
    await t.shoot('saved');

    // Refresh: recomputed through the insight's route, the same numbers.
    await page.getByRole('button', { name: 'Refresh' }).click();
    await page.waitForFunction(() => document.querySelector('.insight-result-panel')?.getAttribute('aria-busy') === 'false');
    t.check(includesAll(await shownNumbers(await resultFor(t, name)), series.data.filter((value) => value !== 0)), 'the refreshed numbers');

    // Rename in place.
    const renamed = `E2E trend ${run} renamed`;
    await page.getByRole('button', { name: 'Rename', exact: true }).click();
    await page.locator('.insight-rename').getByLabel('Name').fill(renamed);
    await page.locator('.insight-rename').getByLabel('Description').fill('Seven events, two of them old');
    await t.shoot('rename');
    await page.locator('.insight-rename').getByRole('button', { name: 'Save' }).click();
    await page.getByRole('heading', { name: renamed, level: 1 }).waitFor();
    const after = await t.api('GET', `/api/projects/${projectId}/insights/${id}/`);
    t.check(after.name === renamed && after.description === 'Seven events, two of them old', `renamed: ${after.name} / ${after.description}`);

    // The persons behind the total: the kind's own control when it has one, on an edited copy.
    await page.getByRole('button', { name: 'Edit query' }).click();
    const editorJson = page.locator('.insight-editor .query-json');
    await editorJson.locator('summary').click();
    await page.locator('#insight-query-json').fill(JSON.stringify({ ...query, trendsFilter: { display: 'BoldNumber' } }));
    await page.getByRole('button', { name: 'Apply JSON' }).click();
    await resultFor(t, 'BoldNumber');
    const number = page.locator('.insight-answer button:not([disabled])').filter({ has: page.locator('data') }).first();
    if (await number.count()) {
        await number.click();
        const dialog = page.getByRole('dialog');
        await dialog.locator('.persons-list').waitFor();
        const listed = await dialog.locator('.person-row').count();
        const actors = await t.api('POST', `/api/projects/${projectId}/query/`, {
            query: { kind: 'ActorsQuery', source: { kind: 'InsightActorsQuery', source: { ...query, trendsFilter: { display: 'BoldNumber' } }, series: 0 }, limit: 25, offset: 0 },
        });
        t.check(listed === actors.results.length && listed === 3, `the dialog lists ${listed} persons, the API ${actors.results.length}`);
        const text = await dialog.textContent();
        for (const person of people) t.check(text.includes(person), `the dialog names ${person}`);
        const href = await dialog.locator('.person-row a').first().getAttribute('href');
        const personIds = actors.results.map((row) => row[0].id);
        t.check(personIds.some((uuid) => href === `/persons/${uuid}`), `a person's link: ${href}`);
        await t.shoot('persons');
        await page.setViewportSize(t.PHONE);
        t.check((await t.overflow()) <= 0, 'the persons dialog fits at 390 px');
        await t.shoot('persons-phone');
        await page.setViewportSize(t.WIDE);
        await dialog.getByRole('button', { name: 'Close' }).click();
    } else {
        console.error('insights: the trend has no persons control yet; the persons dialog was not opened');
    }
    await page.getByRole('button', { name: 'Discard changes' }).click();
    const unchanged = await t.api('GET', `/api/projects/${projectId}/insights/${id}/`);
    t.check(!JSON.stringify(unchanged.query).includes('BoldNumber'), 'discarding leaves the saved query');

    // The list shows it, by search too.
    await t.open('/insights');
    await page.getByRole('link', { name: renamed }).waitFor();
    const row = page.locator(`.insights-table tr[data-id="${id}"]`);
    t.check((await row.textContent()).includes('Trends'), 'the list names its kind');
    await page.getByLabel('Search').fill(run);
    await page.getByRole('button', { name: 'Search' }).click();
    await page.waitForURL(/search=/);
    await page.locator('.insights-table').waitFor();
    const rows = await page.locator('.insights-table tbody tr').count();
    const searched = await t.api('GET', `/api/projects/${projectId}/insights/?saved=true&search=${run}&basic=true`);
    t.check(rows === searched.results.length, `the search lists ${rows} rows, the API ${searched.results.length}`);
    await t.shoot('list');

    // Both widths fit.
    await page.setViewportSize(t.PHONE);
    t.check((await t.overflow()) <= 0, 'the list fits at 390 px');
    await t.shoot('list-phone');
    await t.open(`/insights/${stored.short_id}`);
    await resultFor(t, name);
    t.check((await t.overflow()) <= 0, 'the insight fits at 390 px');
    await t.shoot('insight-phone');
    await page.setViewportSize(t.WIDE);
}
