// Persons: three people captured with person properties ($set); searching one on the page finds
// exactly what the API's search finds; their page shows the API's properties and distinct ids
// and, newest first, the events an EventsQuery on the person answers; a property deleted on the
// page is gone from the API's person.

import { randomUUID } from 'node:crypto';

const SELECT = [
    '*',
    'event',
    'person_display_name -- Person',
    'coalesce(properties.$current_url, properties.$screen_name) -- Url / Screen',
    'properties.$lib',
    'timestamp',
];

/** A property value as the page writes it. */
function valueText(value) {
    if (value === null) return 'null';
    if (typeof value === 'object') return JSON.stringify(value);
    return String(value);
}

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
    const people = ['ada', 'bob', 'cyd'].map((name, index) => ({
        distinct_id: `persons-${run}-${name}`,
        email: `${name}.${run}@persons.example`,
        name: `${name[0].toUpperCase()}${name.slice(1)} ${run}`,
        plan: ['pro', 'free', 'team'][index],
    }));
    const now = Date.now();
    const events = [];
    people.forEach((person, p) => {
        const steps = ['signed up', 'viewed pricing', 'upgraded plan'].slice(0, p + 2);
        steps.forEach((event, index) => {
            const properties = { $current_url: `https://shop.test/${p}/${index}`, $lib: 'web', step: index };
            if (index === 0) properties.$set = { email: person.email, name: person.name, plan: person.plan, visits: p + 1 };
            events.push({
                event: `${event} ${run}`,
                distinct_id: person.distinct_id,
                properties,
                timestamp: new Date(now - (60 - p * 10 - index) * 60_000).toISOString(),
                uuid: randomUUID(),
            });
        });
    });
    await t.capture(events, undefined);

    const target = people[1];
    const personsPath = `/api/projects/${t.projectId}/persons/`;
    // The API's search, once ingestion has made the person with their properties.
    const found = await waitFor('the person', async () => {
        const answer = await t.api('GET', `${personsPath}?search=${encodeURIComponent(target.email)}`);
        return answer.results.length === 1 && answer.results[0].properties.email === target.email ? answer : null;
    });
    const person = found.results[0];
    const timelineQuery = { kind: 'EventsQuery', select: SELECT, after: 'all', orderBy: ['timestamp DESC'], limit: 50, offset: 0, personId: person.uuid };
    const mine = events.filter((event) => event.distinct_id === target.distinct_id);
    const timeline = await waitFor('the person\'s events', async () => {
        const answer = await t.api('POST', `/api/projects/${t.projectId}/query/`, { query: timelineQuery, refresh: 'force_blocking' });
        return answer.results.length === mine.length ? answer : null;
    });

    // The list, searched as a person would.
    await t.open('/persons');
    await page.getByRole('heading', { name: 'Persons', exact: true }).waitFor();
    await page.locator('.persons-table tbody tr').first().waitFor();
    await t.shoot('list');
    await page.getByRole('searchbox', { name: 'Search' }).fill(target.email);
    await page.getByRole('button', { name: 'Search', exact: true }).click();
    await page.waitForFunction(() => new URLSearchParams(location.search).get('search') !== null);
    await page.locator(`.persons-table tbody tr[data-id="${person.id}"]`).waitFor();
    const rows = await page.locator('.persons-table tbody tr').evaluateAll((trs) =>
        trs.map((tr) => ({
            id: tr.getAttribute('data-id'),
            name: tr.querySelector('.person-name')?.textContent?.trim(),
            distinctId: tr.querySelector('.person-distinct-id code')?.textContent?.trim(),
            email: tr.querySelector('.person-email')?.textContent?.trim(),
        })),
    );
    const apiRows = found.results.map((p) => ({ id: p.id, name: p.name, distinctId: p.distinct_ids[0], email: p.properties.email }));
    t.check(JSON.stringify(rows) === JSON.stringify(apiRows), `the search shows ${JSON.stringify(rows)}, the API answers ${JSON.stringify(apiRows)}`);
    await t.shoot('search');

    // The person's page.
    await page.locator(`.persons-table tbody tr[data-id="${person.id}"] .person-name a`).click();
    await page.waitForFunction((id) => location.pathname === `/persons/${id}`, person.id);
    await page.locator('#person-uuid').waitFor();
    t.check((await page.locator('#person-uuid').textContent()) === person.uuid, 'the page shows another person id');
    const ids = await page.locator('.distinct-ids li').allTextContents();
    t.check(JSON.stringify(ids) === JSON.stringify(person.distinct_ids), `distinct ids ${JSON.stringify(ids)}, the API says ${JSON.stringify(person.distinct_ids)}`);
    const fresh = await t.api('GET', `${personsPath}${person.id}/`);
    const shownProperties = await page.locator('table[aria-label="Person properties"] tbody tr').evaluateAll((trs) =>
        trs.map((tr) => [tr.querySelector('.property-key')?.textContent?.trim(), tr.querySelector('.property-value')?.textContent]),
    );
    const apiProperties = Object.entries(fresh.properties)
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([key, value]) => [key, valueText(value)]);
    t.check(
        JSON.stringify(shownProperties) === JSON.stringify(apiProperties),
        `properties ${JSON.stringify(shownProperties)}, the API says ${JSON.stringify(apiProperties)}`,
    );
    t.check(shownProperties.some(([key, value]) => key === 'email' && value === target.email), 'the e-mail is not among the properties');

    // The timeline: the EventsQuery's rows, in its order.
    await page.locator('.person-events tr.event-row').first().waitFor();
    const shownEvents = await page.locator('.person-events tr.event-row').evaluateAll((trs) =>
        trs.map((tr) => [tr.getAttribute('data-uuid'), tr.querySelector('.event-label')?.textContent]),
    );
    const apiEvents = timeline.results.map((row) => [row[0].uuid, row[1]]);
    t.check(JSON.stringify(shownEvents) === JSON.stringify(apiEvents), `the timeline shows ${JSON.stringify(shownEvents)}, the API answers ${JSON.stringify(apiEvents)}`);
    const newestFirst = [...mine].sort((a, b) => b.timestamp.localeCompare(a.timestamp)).map((event) => [event.uuid, event.event]);
    t.check(JSON.stringify(apiEvents) === JSON.stringify(newestFirst), 'the timeline is not the person\'s events newest first');

    // An event opens onto its properties.
    await page.locator('.person-events tr.event-row').first().getByRole('button').click();
    const opened = page.locator('.person-events tr.event-properties').first();
    await opened.waitFor();
    const openedText = await opened.textContent();
    t.check(openedText.includes('$current_url') && openedText.includes(mine[mine.length - 1].properties.$current_url), 'the newest event\'s properties are not shown');
    await t.shoot('person');

    // Search within the properties.
    await page.getByRole('searchbox', { name: 'Search person properties' }).fill('plan');
    const filtered = await page.locator('table[aria-label="Person properties"] tbody tr .property-key').allTextContents();
    t.check(filtered.length === 1 && filtered[0] === 'plan', `searching "plan" leaves ${JSON.stringify(filtered)}`);
    await page.getByRole('searchbox', { name: 'Search person properties' }).fill('');

    // Delete a property through the page; the API's person loses it.
    await page.getByRole('button', { name: 'Delete plan' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Delete property' }).click();
    await page.locator('table[aria-label="Person properties"] tbody tr[data-key="plan"]').waitFor({ state: 'detached' });
    const after = await t.api('GET', `${personsPath}${person.id}/`);
    t.check(!('plan' in after.properties) && after.properties.email === target.email, `after deleting plan the API's person has ${JSON.stringify(after.properties)}`);

    // A phone.
    await page.setViewportSize(t.PHONE);
    await page.waitForTimeout(200);
    t.check((await t.overflow()) <= 0, `the person page is ${await t.overflow()} px too wide on a phone`);
    await t.shoot('person-phone');
    await t.open(`/persons?search=${encodeURIComponent(run)}`);
    await page.locator('.persons-table tbody tr').nth(2).waitFor();
    const runRows = await page.locator('.persons-table tbody tr').count();
    const runApi = await t.api('GET', `${personsPath}?search=${encodeURIComponent(run)}`);
    t.check(runRows === runApi.results.length && runRows === 3, `searching the run shows ${runRows} persons, the API finds ${runApi.results.length}`);
    t.check((await t.overflow()) <= 0, `the persons list is ${await t.overflow()} px too wide on a phone`);
    await t.shoot('list-phone');
    await page.setViewportSize(t.WIDE);
}
