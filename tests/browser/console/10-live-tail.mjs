// posthog-js on a customer's page (another origin: `localhost` against the API's `127.0.0.1`)
// captures an event; Home's live tail shows it within seconds, with its person and URL.

import http from 'node:http';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

export default async function (t) {
    const bundle = await readFile(require.resolve('posthog-js/dist/array.full.js'));
    const distinctId = `shopper-${Math.random().toString(36).slice(2, 10)}`;
    const config = { api_host: t.server, opt_out_useragent_filter: true, request_batching: false, autocapture: false };
    const html = `<!doctype html><html><head><meta charset="utf-8"><title>shop</title>
<script src="/posthog.js"></script>
<script>posthog.init(${JSON.stringify(t.token)}, ${JSON.stringify(config)});
posthog.identify(${JSON.stringify(distinctId)});
posthog.capture('checkout started', { plan: 'team' });
</script></head><body><h1>A shop on another origin</h1></body></html>`;
    const shop = http.createServer((request, response) => {
        if (request.url === '/posthog.js') {
            response.writeHead(200, { 'content-type': 'text/javascript' });
            response.end(bundle);
        } else {
            response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
            response.end(html);
        }
    });
    await new Promise((resolve) => shop.listen(0, '127.0.0.1', resolve));
    const shopUrl = `http://localhost:${shop.address().port}/checkout`;
    t.check(new URL(shopUrl).origin !== new URL(t.server).origin, 'the shop must be another origin');
    const shopper = await t.context.newPage();
    try {
        await t.open('/');
        // The tail's panel (an empty project shows a hint instead of the table until an event comes).
        await t.page.locator('.live-status').waitFor();
        await shopper.goto(shopUrl);
        await shopper.getByRole('heading', { name: 'A shop on another origin' }).waitFor();

        // The console polls every 2 s: the event shows up with its person and the shop's URL.
        const row = t.page.locator('#live-tail tbody tr', { hasText: distinctId }).filter({ hasText: 'checkout started' });
        await row.first().waitFor({ timeout: 30000 });
        const shown = await row.first().evaluate((element) => ({
            event: element.querySelector('.event').textContent,
            who: element.querySelector('.who').textContent,
            url: element.querySelector('.url').textContent,
        }));
        t.check(shown.event === 'checkout started' && shown.who === distinctId && shown.url === shopUrl,
            `the live tail shows ${JSON.stringify(shown)}`);
        // The API has the same event.
        const stored = await t.api('POST', `/api/projects/${t.projectId}/query/`, {
            query: { kind: 'HogQLQuery', query: `SELECT event, properties.$current_url, properties.plan FROM events WHERE distinct_id = '${distinctId}' AND event = 'checkout started'` },
            refresh: 'force_blocking',
        });
        t.check(JSON.stringify(stored.results) === JSON.stringify([['checkout started', shopUrl, 'team']]),
            `the API has ${JSON.stringify(stored.results)}`);
        await t.shoot('posthog-js-event');
    } finally {
        await shopper.close();
        await new Promise((resolve) => shop.close(resolve));
    }
}
