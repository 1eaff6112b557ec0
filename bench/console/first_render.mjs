// The time to first render of the console's Home page: a logged-in browser (Debian's headless
// Chromium, through Playwright) opens `/` and the clock stops when every number of the page is on
// screen (totals, events per day, top events, top pages) and the live tail has its rows. Run
// against a running `analytics serve` (a release build over a large project, for docs/benchmarks.md).
//
// Usage (from the repository's root, after `npm ci` in tests/browser for playwright-core):
//   node bench/console/first_render.mjs <server url> <email> <password> [runs]
// Prints one JSON line: each run's milliseconds (navigation to the last number shown), and the
// time to the page's frame (its totals' boxes drawn, still loading).

import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const require = createRequire(join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'tests', 'browser', 'package.json'));
const { chromium } = require('playwright-core');

const [server, email, password, runsArgument] = process.argv.slice(2);
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
    await page.goto(`${server}/login`);
    await page.getByLabel('Email').fill(email);
    await page.getByLabel('Password').fill(password);
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.locator('#total-events').waitFor();
    const results = [];
    for (let run = 0; run < runs; run += 1) {
        await page.goto('about:blank');
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
    console.log(JSON.stringify({ server, results }));
} finally {
    await browser.close();
}
