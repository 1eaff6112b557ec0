// The time to first render of the console's Home page: a logged-in browser (Debian's headless
// Chromium, through Playwright) opens `/` and the clock stops when every number of the page is on
// screen (totals, events per day, top events, top pages) and the live tail has its rows. Run
// against a running `analytics serve` (a release build over a large project, for docs/benchmarks.md).
//
// Usage (from the repository's root, after `npm ci` in tests/browser for playwright-core):
//   node bench/console/first_render.mjs <server url> <email> <password> [runs] [--cold]
// With --cold, one event is captured (and waited for) before each run, so the lake has changed
// and none of Home's queries can be answered from the result cache: the first render after new
// data, as a team sees it while events flow. Without it, the runs after the first are served by
// the cache.
// Prints one JSON line: each run's milliseconds (navigation to the last number shown), and the
// time to the page's frame (its totals' boxes drawn, still loading).

import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const require = createRequire(join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'tests', 'browser', 'package.json'));
const { chromium } = require('playwright-core');

const cold = process.argv.includes('--cold');
const [server, email, password, runsArgument] = process.argv.slice(2).filter((argument) => argument !== '--cold');
if (!server || !email || !password) {
    console.error('usage: node bench/console/first_render.mjs <server url> <email> <password> [runs]');
    process.exit(2);
}
const runs = Number(runsArgument ?? 5);
const CHROMIUM_ARGS = [
    '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync',
];
const NUMBERS = ['#total-events', '#unique-users', '#top-events', '#top-pages', '#live-tail tbody tr'];

const browser = await chromium.launch({ executablePath: process.env.CHROMIUM || '/usr/bin/chromium', args: CHROMIUM_ARGS });
try {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    page.setDefaultTimeout(120000);
    // Logged in through the API (the same cookies a login in the page sets), so no run of Home
    // happens before the first measured one.
    const login = await context.request.post(`${server}/api/login/`, { data: { email, password } });
    if (!login.ok()) throw new Error(`login: ${login.status()} ${await login.text()}`);
    const csrf = (await context.cookies()).find((cookie) => cookie.name === 'posthog_csrftoken')?.value ?? '';
    const project = await (await context.request.get(`${server}/api/projects/@current/`)).json();
    const marker = `bench first render ${Date.now()}`;
    const count = async () => {
        const answer = await context.request.post(`${server}/api/projects/${project.id}/query/`, {
            headers: { 'X-CSRFToken': csrf },
            data: { query: { kind: 'HogQLQuery', query: `SELECT count() FROM events WHERE event = '${marker}'` }, refresh: 'force_blocking' },
        });
        return (await answer.json()).results[0][0];
    };
    /** One more event, landed in the lake (so every cached answer of Home is out of date). */
    async function newData(sent) {
        const batch = [{ event: marker, distinct_id: 'bench-first-render', properties: {} }];
        await context.request.post(`${server}/batch/`, { data: { api_key: project.api_token, batch } });
        const deadline = Date.now() + 60000;
        while ((await count()) < sent) {
            if (Date.now() > deadline) throw new Error('the marker event did not land');
            await new Promise((resolve) => setTimeout(resolve, 200));
        }
    }
    const results = [];
    for (let run = 0; run < runs; run += 1) {
        await page.goto('about:blank');
        if (cold) await newData(run + 1);
        const started = Date.now();
        await page.goto(`${server}/`);
        await page.locator('.stats').waitFor();
        const shell = Date.now() - started;
        await Promise.all([
            ...NUMBERS.map((selector) => page.locator(selector).first().waitFor()),
            page.locator('#daily-table').waitFor({ state: 'attached' }),
        ]);
        const events = await page.locator('#total-events').getAttribute('value');
        results.push({ run: run + 1, shell_ms: shell, numbers_ms: Date.now() - started, events: Number(events) });
    }
    console.log(JSON.stringify({ server, cold, results }));
} finally {
    await browser.close();
}
