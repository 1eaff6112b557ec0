// Events: events of this check's own names, filtered on the page by an event name and then by a
// property (exact, contains, is set); each time the rows (which events, in which order) are the
// API's answer to the same EventsQuery. A row opens onto its properties and links to its person.

import { randomUUID } from 'node:crypto';

const SELECT = [
    '*',
    'event',
    'person_display_name -- Person',
    'coalesce(properties.$current_url, properties.$screen_name) -- Url / Screen',
    'properties.$lib',
    'timestamp',
];

async function waitFor(what, probe, seconds = 30) {
    const deadline = Date.now() + seconds * 1000;
    for (;;) {
        const answer = await probe();
        if (answer) return answer;
        if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
        await new Promise((resolve) => setTimeout(resolve, 300));
    }
}

export default async function (t) {
    const { page } = t;
    const run = randomUUID().slice(0, 8);
    const signup = `events ${run} signed up`;
    const click = `events ${run} clicked`;
    const plans = ['pro', 'free', 'pro', 'enterprise', 'pro'];
    const now = Date.now();
    const events = [];
    plans.forEach((plan, index) => {
        events.push({
            event: signup,
            distinct_id: `events-${run}-${index}`,
            properties: { plan, $current_url: `https://shop.test/signup/${index}`, $lib: 'web', $set: { email: `user${index}.${run}@events.example` } },
            timestamp: new Date(now - (30 - index) * 60_000).toISOString(),
            uuid: randomUUID(),
        });
    });
    for (let index = 0; index < 3; index += 1) {
        events.push({
            event: click,
            distinct_id: `events-${run}-${index}`,
            properties: { button: `b${index}`, $lib: 'posthog-python' },
            timestamp: new Date(now - (20 - index) * 60_000).toISOString(),
            uuid: randomUUID(),
        });
    }
    // More views than one page holds (50), for "Load more".
    const viewed = `events ${run} viewed`;
    for (let index = 0; index < 53; index += 1) {
        events.push({
            event: viewed,
            distinct_id: `events-${run}-${index % 4}`,
            properties: { $current_url: `https://shop.test/item/${index}`, $lib: 'web' },
            timestamp: new Date(now - (15 * 60 - index * 10) * 1000).toISOString(),
            uuid: randomUUID(),
        });
    }
    await t.capture(events, undefined);

    const query = (extra) => ({ kind: 'EventsQuery', select: SELECT, after: '-24h', orderBy: ['timestamp DESC'], limit: 50, offset: 0, ...extra });
    const answer = (node) => t.api('POST', `/api/projects/${t.projectId}/query/`, { query: node, refresh: 'force_blocking' });
    await waitFor('the events', async () => (await answer(query({ event: signup }))).results.length === plans.length);
    await waitFor('the views', async () => (await answer(query({ event: viewed, offset: 50 }))).results.length === 3);
    // The pickers list what the definitions know.
    await waitFor('the definitions', async () => {
        const names = await t.api('GET', `/api/projects/${t.projectId}/event_definitions/?search=${encodeURIComponent(run)}`);
        const keys = await t.api('GET', `/api/projects/${t.projectId}/property_definitions/?type=event&search=plan`);
        return names.results.length >= 2 && keys.results.some((definition) => definition.name === 'plan');
    });

    /** The rows on the page: uuid, event, person, URL, library. */
    const shown = () =>
        page.locator('.events-table tr.event-row').evaluateAll((trs) =>
            trs.map((tr) => [
                tr.getAttribute('data-uuid'),
                tr.querySelector('.event-label')?.textContent,
                tr.querySelector('.event-person')?.textContent,
                tr.querySelector('.event-url')?.textContent,
                tr.querySelector('.event-lib')?.textContent,
            ]),
        );
    const expected = (result) =>
        result.results.map((row) => [row[0].uuid, row[1], row[2].display_name ?? row[0].distinct_id, row[3] ?? '—', row[4] ?? '—']);
    /** Waits until the list is the API's answer to `node` (it reloads after a filter changes). */
    async function same(node, what) {
        const want = expected(await answer(node));
        const deadline = Date.now() + 15000;
        for (;;) {
            await page.locator('section[aria-label="Events"][aria-busy="false"]').waitFor();
            const rows = await shown();
            if (JSON.stringify(rows) === JSON.stringify(want)) return rows;
            if (Date.now() > deadline) throw new Error(`${what}: the page shows ${JSON.stringify(rows)}, the API answers ${JSON.stringify(want)}`);
            await page.waitForTimeout(250);
        }
    }

    await t.open('/events');
    await page.getByRole('heading', { name: 'Events', exact: true }).waitFor();
    await page.locator('.events-table tr.event-row').first().waitFor();
    await t.shoot('all');

    // One event name.
    const offered = (select, value) =>
        page.waitForFunction(([name, wanted]) => [...(document.querySelector(`select[name="${name}"]`)?.options ?? [])].some((option) => option.value === wanted), [select, value]);
    await offered('event', signup);
    await page.locator('select[name="event"]').selectOption(signup);
    await page.waitForFunction((name) => new URLSearchParams(location.search).get('event') === name, signup);
    const bySignup = await same(query({ event: signup }), `event ${signup}`);
    t.check(bySignup.length === plans.length, `${bySignup.length} rows for ${signup}, ${plans.length} were sent`);

    // And a property: plan = pro.
    await offered('key', 'plan');
    await page.locator('select[name="key"]').selectOption('plan');
    await page.locator('select[name="op"]').selectOption('exact');
    await page.locator('input[name="value"]').fill('pro');
    await page.getByRole('button', { name: 'Apply' }).click();
    await page.waitForFunction(() => new URLSearchParams(location.search).get('value') === 'pro');
    const exact = [{ type: 'event', key: 'plan', operator: 'exact', value: 'pro' }];
    const pro = await same(query({ event: signup, properties: exact }), 'plan = pro');
    t.check(pro.length === plans.filter((plan) => plan === 'pro').length, `${pro.length} rows with plan pro`);
    await t.shoot('filtered');

    // Contains, then is set.
    await page.locator('select[name="op"]').selectOption('icontains');
    await page.locator('input[name="value"]').fill('PRI');
    await page.getByRole('button', { name: 'Apply' }).click();
    await page.waitForFunction(() => new URLSearchParams(location.search).get('op') === 'icontains');
    const contains = await same(query({ event: signup, properties: [{ type: 'event', key: 'plan', operator: 'icontains', value: 'PRI' }] }), 'plan contains PRI');
    t.check(contains.length === 1, `${contains.length} rows whose plan contains "PRI"`);
    await page.locator('select[name="event"]').selectOption('');
    await page.locator('select[name="op"]').selectOption('is_set');
    await page.getByRole('button', { name: 'Apply' }).click();
    await page.waitForFunction(() => new URLSearchParams(location.search).get('op') === 'is_set' && !new URLSearchParams(location.search).get('event'));
    await same(query({ properties: [{ type: 'event', key: 'plan', operator: 'is_set', value: 'is_set' }] }), 'plan is set');

    // A page at a time: 50 views, then the 3 more "Load more" asks for.
    await t.open(`/events?event=${encodeURIComponent(viewed)}`);
    await page.waitForFunction((name) => new URLSearchParams(location.search).get('event') === name, viewed);
    const firstPage = await same(query({ event: viewed }), 'the first page of views');
    t.check(firstPage.length === 50, `the first page holds ${firstPage.length} views`);
    await page.getByRole('button', { name: 'Load more' }).click();
    const nextPage = expected(await answer(query({ event: viewed, offset: 50 })));
    await page.locator('.events-table tr.event-row').nth(52).waitFor();
    const all = await shown();
    t.check(JSON.stringify(all) === JSON.stringify([...firstPage, ...nextPage]), `after "Load more" the page shows ${all.length} views`);
    t.check((await page.getByRole('button', { name: 'Load more' }).count()) === 0, '"Load more" is still offered after the last view');

    // Back to plan = pro on the sign-ups: a row opens onto its properties, and links to its person.
    await t.open(`/events?event=${encodeURIComponent(signup)}&key=plan&value=pro`);
    await page.waitForFunction(() => new URLSearchParams(location.search).get('value') === 'pro');
    const rows = await same(query({ event: signup, properties: exact }), 'plan = pro from the address');
    const first = page.locator('.events-table tr.event-row').first();
    await first.getByRole('button').click();
    const properties = page.locator('.events-table tr.event-properties').first();
    await properties.waitFor();
    const keys = await properties.locator('.property-key').allTextContents();
    const sent = events.find((event) => event.uuid === rows[0][0]);
    t.check(keys.includes('plan') && keys.includes('$current_url'), `the opened row shows ${JSON.stringify(keys)}`);
    const planValue = await properties.locator('tr[data-key="plan"] .property-value').textContent();
    t.check(planValue === sent.properties.plan, `the opened row's plan is ${planValue}`);
    await t.shoot('expanded');

    const personLink = first.locator('.event-person a');
    const href = await personLink.getAttribute('href');
    const person = await t.api('GET', `/api/projects/${t.projectId}/persons/?distinct_id=${encodeURIComponent(sent.distinct_id)}`);
    t.check(href === `/persons/${person.results[0].id}`, `the person link is ${href}, the API's person is ${person.results[0].id}`);

    await page.setViewportSize(t.PHONE);
    await page.waitForTimeout(200);
    t.check((await t.overflow()) <= 0, `the events page is ${await t.overflow()} px too wide on a phone`);
    await t.shoot('phone');
    await page.setViewportSize(t.WIDE);

    await personLink.click();
    await page.waitForFunction((id) => location.pathname === `/persons/${id}`, person.results[0].id);
    await page.locator('#person-uuid').waitFor();
}
