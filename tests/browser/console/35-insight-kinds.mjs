// The six kinds of insight, built through their editors at /insights/new?kind=<Kind>: a trend and
// a 3-step funnel of events sent here (five persons over several days), and a retention, paths,
// stickiness and lifecycle insight once each. Every number on screen must be the API's answer to
// the node the page shows (`#insight-result[data-query]`, sent again with the personal API key);
// a trend's point and a funnel's drop-off open the persons behind them; the API's 400 shows on
// the page; the editors and results fit a phone. Screenshots of each kind.

const pause = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

export default async function (t) {
    const { page } = t;
    const tag = Math.random().toString(36).slice(2, 8);
    const ONE = `kinds ${tag} viewed`;
    const TWO = `kinds ${tag} added`;
    const THREE = `kinds ${tag} paid`;
    const SITE = `https://kinds-${tag}.test`;
    const people = ['ana', 'bo', 'cy', 'di', 'ed'].map((name) => `kinds-${tag}-${name}`);
    const project = await t.api('GET', `/api/projects/${t.projectId}/`);
    const zone = project.timezone;
    const localDay = (date) => new Intl.DateTimeFormat('en-CA', { timeZone: zone, year: 'numeric', month: '2-digit', day: '2-digit' }).format(date);

    // Person i: the first step on days i%3, i%3+2, i%3+4 ago; the second step unless the last
    // person; the third for the first two; three pages each visit (the first three also sign up).
    const now = Date.now() - 2 * 3600 * 1000;
    const events = [];
    const firstStepDays = new Map(); // local day → distinct ids with the first step that day
    people.forEach((id, index) => {
        for (let ago = index % 3; ago < 6; ago += 2) {
            const at = (minutes) => new Date(now - ago * 86400000 + minutes * 60000);
            const add = (event, minutes, properties = {}) => events.push({ event, distinct_id: id, timestamp: at(minutes).toISOString(), properties });
            add(ONE, 0, { plan: index % 2 ? 'pro' : 'free' });
            const day = localDay(at(0));
            firstStepDays.set(day, new Set([...(firstStepDays.get(day) ?? []), id]));
            if (index < 4) add(TWO, 5);
            if (index < 2) add(THREE, 10);
            add('$pageview', 1, { $current_url: `${SITE}/` });
            add('$pageview', 2, { $current_url: `${SITE}/pricing` });
            if (index < 3) add('$pageview', 3, { $current_url: `${SITE}/signup` });
        }
    });
    await t.capture(events, undefined);
    const deadline = Date.now() + 30000;
    for (;;) {
        const counted = await t.api('POST', `/api/projects/${t.projectId}/query/`, {
            query: { kind: 'HogQLQuery', query: `SELECT count() FROM events WHERE distinct_id LIKE 'kinds-${tag}-%'` },
            refresh: 'force_blocking',
        });
        if (counted.results[0][0] >= events.length) break;
        if (Date.now() > deadline) throw new Error(`${counted.results[0][0]} of ${events.length} events landed`);
        await pause(300);
    }

    const api = (query) => t.api('POST', `/api/projects/${t.projectId}/query/`, { query, refresh: 'force_blocking' });
    const result = page.locator('#insight-result');

    /** Waits until the page shows an answer (not running) to a node `accept` likes; its node. */
    async function shown(accept, what) {
        const until = Date.now() + 30000;
        for (;;) {
            const state = await page.evaluate(() => {
                const element = document.querySelector('#insight-result');
                const panel = document.querySelector('.insight-result-panel');
                return { query: element?.getAttribute('data-query') ?? null, busy: panel?.getAttribute('aria-busy') === 'true' };
            });
            if (state.query && !state.busy) {
                const query = JSON.parse(state.query);
                if (accept(query)) return query;
            }
            if (Date.now() > until) throw new Error(`${what}: the page shows ${state.query} (busy: ${state.busy})`);
            await pause(200);
        }
    }
    const values = (selector) => result.locator(selector).evaluateAll((nodes) => nodes.map((node) => Number(node.getAttribute('value'))));
    const same = (shownValues, apiValues, what) =>
        t.check(JSON.stringify(shownValues) === JSON.stringify(apiValues), `${what}: the page shows ${JSON.stringify(shownValues)}, the API answers ${JSON.stringify(apiValues)}`);
    /** Types a name into an event or property box, as a person picks it; waits until the node has it. */
    async function pickEvent(label, event) {
        const box = page.getByLabel(label, { exact: true });
        await box.fill(event);
        await box.press('Enter');
        // The page's editor node (`main[data-query]`), when the page exposes it.
        const editing = () => page.locator('main').first().getAttribute('data-query');
        const until = Date.now() + 10000;
        for (let node = await editing(); node !== null && !node.includes(JSON.stringify(event)); node = await editing()) {
            if (Date.now() > until) throw new Error(`${label}: the box shows ${await box.inputValue()}, the node is ${node}`);
            await pause(100);
        }
        if (await editing() !== null) t.check((await box.inputValue()) === event, `${label}: the box shows ${await box.inputValue()} after picking ${event}`);
    }
    /** The page at a phone's width: nothing wider than the window; a screenshot. */
    async function phone(name) {
        await page.setViewportSize(t.PHONE);
        // The window has its new width and the page has laid out again (charts resize on their
        // own): wait for that, then the document must not be wider than the window.
        const fits = (width) =>
            page
                .waitForFunction((width) => window.innerWidth === width && document.documentElement.scrollWidth <= width, width, { timeout: 5000 })
                .catch(() => {});
        await fits(t.PHONE.width);
        t.check((await t.overflow()) <= 0, `${name} is ${await t.overflow()} px too wide at 390 px`);
        await t.shoot(`${name}-390`);
        await page.setViewportSize(t.WIDE);
        await fits(t.WIDE.width);
    }
    async function personsShown() {
        const dialog = page.locator('dialog[open]');
        await dialog.waitFor();
        await dialog.locator('.persons-list').waitFor();
        const ids = (await dialog.locator('.distinct-ids').allTextContents()).flatMap((text) => text.split(',').map((id) => id.trim()).filter(Boolean));
        return { dialog, ids: ids.sort() };
    }

    // Trends: the first step, counted per day over 14 days, built through the editor.
    await t.open('/insights/new?kind=TrendsQuery');
    await result.waitFor();
    await pickEvent('Series 1 event', ONE);
    await page.getByLabel('Dates').selectOption('-14d');
    let trend = await shown((query) => query.series?.[0]?.event === ONE && query.dateRange?.date_from === '-14d', 'trend');
    let answer = await api(trend);
    same(await values('.chart-table tbody td data'), answer.results[0].data, 'trend per day');
    same(await values('.kind-legend tbody td data'), [answer.results[0].count], 'trend total');
    t.check(answer.results[0].count === events.filter((event) => event.event === ONE).length, `the trend counts ${answer.results[0].count}`);
    await t.shoot('trends');

    // A point of the trend: the busiest day, clicked on the chart, lists its persons.
    const data = answer.results[0].data;
    const busiest = data.indexOf(Math.max(...data));
    const over = await result.locator('.u-over').boundingBox();
    await page.mouse.move(over.x + over.width * ((busiest + 0.5) / data.length), over.y + over.height / 2);
    await page.mouse.click(over.x + over.width * ((busiest + 0.5) / data.length), over.y + over.height / 2);
    const day = answer.results[0].days[busiest];
    const persons = await personsShown();
    const want = [...(firstStepDays.get(day) ?? [])].sort();
    same(persons.ids, want, `persons of ${day}`);
    await t.shoot('trends-persons');
    await page.keyboard.press('Escape');
    await persons.dialog.waitFor({ state: 'detached' }).catch(() => {});

    // Bars, a breakdown and the previous period: still the API's numbers, series by series.
    await page.getByLabel('Display').selectOption('ActionsBar');
    await page.getByLabel('Breakdown').first().selectOption('event');
    await pickEvent('Breakdown property', 'plan');
    await page.getByLabel('Compare to previous period').check();
    trend = await shown((query) => query.breakdownFilter?.breakdown === 'plan' && query.compareFilter?.compare === true && query.trendsFilter?.display === 'ActionsBar', 'trend by plan');
    answer = await api(trend);
    const rows = await result.locator('.chart-table tbody tr').evaluateAll((rows) =>
        rows.map((row) => [...row.querySelectorAll('td')].map((cell) => Number(cell.querySelector('data')?.getAttribute('value') ?? NaN))),
    );
    same(rows, answer.results[0].data.map((_, index) => answer.results.map((series) => series.data[index])), 'trend by plan per day');
    same(await values('.kind-legend tbody td data'), answer.results.map((series) => series.count), 'trend by plan totals');
    await t.shoot('trends-breakdown');

    // The API's refusal shows on the page: a sum needs a property.
    await page.getByLabel('Counted as').selectOption('sum');
    await page.locator('.insight-failed .form-error', { hasText: 'math_property' }).waitFor();
    await page.getByLabel('Display').selectOption('BoldNumber');
    await page.getByLabel('Counted as').selectOption('dau');
    trend = await shown((query) => query.trendsFilter?.display === 'BoldNumber' && query.series[0].math === 'dau', 'trend as a number');
    answer = await api(trend);
    same(await values('.kind-numbers data'), answer.results.map((series) => series.aggregated_value), 'trend as numbers');

    // At a phone's width the editor and result fit.
    await phone('trends');

    // Funnels: three steps in order, within 14 days.
    await t.open('/insights/new?kind=FunnelsQuery');
    await result.waitFor();
    await pickEvent('Step 1 event', ONE);
    await pickEvent('Step 2 event', TWO);
    await page.getByRole('button', { name: 'Add step' }).click();
    await pickEvent('Step 3 event', THREE);
    await page.getByLabel('Dates').selectOption('-14d');
    const funnel = await shown((query) => query.series?.length === 3 && query.series[2].event === THREE && query.dateRange?.date_from === '-14d', 'funnel');
    answer = await api(funnel);
    const counts = answer.results.map((step) => step.count);
    same(counts, [5, 4, 2], 'the funnel the events make');
    same(await values('.kind-step-count'), counts, 'funnel step counts');
    const percent = (part, whole) => (whole > 0 ? Math.round((part / whole) * 1000) / 10 : 0);
    same(await values('.kind-step-conversion'), counts.map((count) => percent(count, counts[0])), 'funnel conversion from the first step');
    same(await values('.kind-step-previous'), counts.slice(1).map((count, index) => percent(count, counts[index])), 'funnel conversion from the previous step');
    same(await values('.kind-step-dropped'), counts.slice(1).map((count, index) => counts[index] - count), 'funnel drop-off');
    await t.shoot('funnels');
    // Who dropped off before the second step: the last person only.
    await result.getByRole('button', { name: 'Persons who dropped off before step 2' }).click();
    const dropped = await personsShown();
    same(dropped.ids, [people[4]], 'persons who dropped off before step 2');
    await page.keyboard.press('Escape');
    await dropped.dialog.waitFor({ state: 'detached' }).catch(() => {});
    await result.getByRole('button', { name: 'Persons who reached step 3' }).click();
    const reached = await personsShown();
    same(reached.ids, people.slice(0, 2).sort(), 'persons who reached step 3');
    await page.keyboard.press('Escape');
    await reached.dialog.waitFor({ state: 'detached' }).catch(() => {});
    await phone('funnels');

    // Retention of the first step, day by day.
    await t.open('/insights/new?kind=RetentionQuery');
    await result.waitFor();
    await pickEvent('Target event', ONE);
    await pickEvent('Returning event', ONE);
    const retention = await shown(
        (query) => query.retentionFilter?.targetEntity?.id === ONE && query.retentionFilter?.returningEntity?.id === ONE,
        'retention',
    );
    answer = await api(retention);
    same(await values('.kind-cohort-size'), answer.results.map((row) => row.values[0]?.count ?? 0), 'retention cohort sizes');
    same(await values('.kind-cell data'), answer.results.flatMap((row) => row.values.map((value) => value.count)), 'retention cells');
    await t.shoot('retention');
    // A cell opens its cohort's persons: as many as the cohort's size, all of them this test's.
    const cohort = answer.results.findIndex((row) => (row.values[0]?.count ?? 0) > 0);
    await result.locator(`tr[data-cohort="${cohort}"] .kind-cell`).first().click();
    const members = await personsShown();
    t.check(
        members.ids.length === answer.results[cohort].values[0].count && members.ids.every((id) => people.includes(id)),
        `the persons of cohort ${cohort}: ${JSON.stringify(members.ids)}, its size ${answer.results[cohort].values[0].count}`,
    );
    await page.keyboard.press('Escape');
    await members.dialog.waitFor({ state: 'detached' }).catch(() => {});
    await phone('retention');

    // Paths from this test's home page.
    await t.open('/insights/new?kind=PathsQuery');
    await result.waitFor();
    const start = page.getByLabel('Starts at');
    await start.fill(SITE);
    await start.press('Enter');
    await page.getByLabel('Dates').selectOption('-14d');
    const paths = await shown((query) => query.pathsFilter?.startPoint === SITE && query.dateRange?.date_from === '-14d', 'paths');
    answer = await api(paths);
    t.check(answer.results.length > 0, 'the paths answer no edges');
    same(await values('.kind-edges tbody td data'), answer.results.map((edge) => edge.value), 'paths edges');
    await t.shoot('paths');
    // An edge opens the persons who took it: those who went on to sign up are the first three.
    await result.locator(`.kind-edges tr[data-target="3_${SITE}/signup"] button`).click();
    const walkers = await personsShown();
    same(walkers.ids, people.slice(0, 3).sort(), 'persons from pricing to signup');
    await page.keyboard.press('Escape');
    await walkers.dialog.waitFor({ state: 'detached' }).catch(() => {});
    await phone('paths');

    // Stickiness of the first step.
    await t.open('/insights/new?kind=StickinessQuery');
    await result.waitFor();
    await pickEvent('Series 1 event', ONE);
    const sticky = await shown((query) => query.series?.[0]?.event === ONE, 'stickiness');
    answer = await api(sticky);
    same(await values('.chart-table tbody td data'), answer.results[0].data, 'stickiness per number of days');
    await t.shoot('stickiness');
    await phone('stickiness');

    // Lifecycle of the first step.
    await t.open('/insights/new?kind=LifecycleQuery');
    await result.waitFor();
    await pickEvent('Lifecycle event', ONE);
    const lifecycle = await shown((query) => query.series?.[0]?.event === ONE, 'lifecycle');
    answer = await api(lifecycle);
    const cells = await result.locator('.chart-table tbody tr').evaluateAll((rows) =>
        rows.map((row) => [...row.querySelectorAll('td')].map((cell) => Number(cell.querySelector('data')?.getAttribute('value') ?? NaN))),
    );
    same(cells, answer.results[0].data.map((_, index) => answer.results.map((status) => status.data[index])), 'lifecycle per day and status');
    await t.shoot('lifecycle');
    await phone('lifecycle');
}
