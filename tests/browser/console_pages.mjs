// The console's sections in Debian's headless Chromium, one check per section
// (tests/browser/console/<nn>-<section>.mjs, run in name order on one server and one login), each
// comparing what the page shows with what the API answers for the same question.
// Run by tests/browser/test_console.py after the Home and login checks.
//
// Usage: node console_pages.mjs <server url> <screenshot folder> [section name ...]
// Environment: CONSOLE_EMAIL, CONSOLE_PASSWORD, CONSOLE_CODE (a backup code when 2FA is on),
// ANALYTICS_KEY (a personal API key, for the checks' own API calls), ANALYTICS_PROJECT (its id),
// ANALYTICS_TOKEN (the project token, for capture).
// Prints one JSON line `{"sections": [...], "screenshots": [...], "failures": [...]}`; exit 1 when
// any section failed, a page error or a 5xx happened, a CSP violation was reported, or a request
// left for another origin than the server's (or an origin a section declares, see `t.allowOrigin`).
//
// A section's module: `export default async function (t) { ... }` with `t` as built below.

import { mkdir, readdir } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const HERE = dirname(fileURLToPath(import.meta.url));
const [server, shots, ...only] = process.argv.slice(2);
if (!server || !shots) {
    console.error('usage: node console_pages.mjs <server url> <screenshot folder> [section ...]');
    process.exit(2);
}
const env = (name) => {
    const value = process.env[name];
    if (!value) throw new Error(`${name} is not set`);
    return value;
};
const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
const CHROMIUM_ARGS = [
    '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync',
];
const WIDE = { width: 1280, height: 900 };
const PHONE = { width: 390, height: 844 };
const origin = new URL(server).origin;
const allowed = new Set([origin]);
const key = env('ANALYTICS_KEY');
const projectId = Number(env('ANALYTICS_PROJECT'));
const token = env('ANALYTICS_TOKEN');

const failures = [];
const screenshots = [];
await mkdir(shots, { recursive: true });

/** The API, called with the personal API key (what a script would do): the answer's JSON. */
async function api(method, path, body) {
    const response = await fetch(`${server}${path}`, {
        method,
        headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${text}`);
    return text ? JSON.parse(text) : null;
}

/** Sends events through `/batch/` as an SDK does, and waits until the project counts `total`. */
async function capture(events, total) {
    const response = await fetch(`${server}/batch/`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ api_key: token, batch: events }),
    });
    if (!response.ok) throw new Error(`/batch/: ${response.status} ${await response.text()}`);
    if (total === undefined) return;
    const deadline = Date.now() + 20000;
    for (;;) {
        const counted = await api('POST', `/api/projects/${projectId}/query/`, {
            query: { kind: 'HogQLQuery', query: 'SELECT count() FROM events' },
            refresh: 'force_blocking',
        });
        const landed = counted.results[0][0];
        if (landed >= total) return;
        if (Date.now() > deadline) throw new Error(`${landed} of ${total} events landed`);
        await new Promise((resolve) => setTimeout(resolve, 200));
    }
}

const browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
const context = await browser.newContext({ viewport: WIDE });
const page = await context.newPage();
page.setDefaultTimeout(20000);
let section = 'login';
page.on('pageerror', (error) => failures.push(`${section}: page error: ${error.message}`));
page.on('console', (message) => {
    const text = message.text();
    if (/Content Security Policy|Refused to/i.test(text)) failures.push(`${section}: CSP: ${text}`);
    // The API's 4xx answers are how the page learns of bad input; a 5xx is a bug.
    else if (message.type() === 'error' && !/Failed to load resource: the server responded with a status of 4\d\d/.test(text))
        failures.push(`${section}: console ${message.type()}: ${text}`);
});
page.on('request', (request) => {
    const url = new URL(request.url());
    if (!allowed.has(url.origin) && url.protocol !== 'data:') failures.push(`${section}: a request to another origin: ${request.url()}`);
});
page.on('response', (response) => {
    if (response.status() >= 500) failures.push(`${section}: ${response.status()} from ${response.request().method()} ${response.url()}`);
});

/** What a section's check gets. */
const t = {
    page,
    context,
    server,
    projectId,
    token,
    api,
    capture,
    WIDE,
    PHONE,
    /** A screenshot of the whole page, `<nn>-<section>-<name>.png`. */
    async shoot(name) {
        const path = join(shots, `${section}-${name}.png`);
        await page.screenshot({ path, fullPage: true });
        screenshots.push(path);
    },
    /** Opens a console path (`/insights`) as a navigation inside the app, without a reload. */
    async open(path) {
        await page.evaluate((to) => {
            window.history.pushState(null, '', to);
            window.dispatchEvent(new PopStateEvent('popstate'));
        }, path);
    },
    /** Fails the check (with the section's name) unless `condition`. */
    check(condition, message) {
        if (!condition) throw new Error(message);
    },
    /** How far the page is wider than the window (0 or less: it fits). */
    overflow: () => page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth),
    /** Lets the page load from `url`'s origin too (a section that serves a page of its own). */
    allowOrigin(url) {
        allowed.add(new URL(url).origin);
    },
};

const sections = [];
try {
    // Log in once, as a person does (with a backup code when 2FA is on).
    await page.goto(`${server}/login`);
    await page.getByLabel('Email').fill(env('CONSOLE_EMAIL'));
    await page.getByLabel('Password').fill(env('CONSOLE_PASSWORD'));
    await page.getByRole('button', { name: 'Log in' }).click();
    const code = process.env.CONSOLE_CODE;
    if (code) {
        await page.getByLabel('Authentication code').fill(code);
        await page.getByRole('button', { name: 'Verify' }).click();
    }
    await page.getByRole('navigation', { name: 'Sections' }).waitFor();

    const files = (await readdir(join(HERE, 'console'))).filter((name) => name.endsWith('.mjs')).sort();
    for (const file of files) {
        section = file.replace(/\.mjs$/, '');
        const name = section.replace(/^\d+-/, '');
        if (only.length && !only.includes(name)) continue;
        const started = Date.now();
        try {
            await page.setViewportSize(WIDE);
            const check = (await import(join(HERE, 'console', file))).default;
            await check(t);
            sections.push({ section: name, ok: true, seconds: (Date.now() - started) / 1000 });
        } catch (error) {
            failures.push(`${section}: ${error.stack || error.message}`);
            sections.push({ section: name, ok: false, seconds: (Date.now() - started) / 1000 });
            await t.shoot('failure').catch(() => {});
        }
    }
} catch (error) {
    failures.push(`${section}: ${error.stack || error.message}`);
    await t.shoot('failure').catch(() => {});
} finally {
    await browser.close();
}
console.log(JSON.stringify({ sections, screenshots, failures }));
if (failures.length) {
    for (const failure of failures) console.error(`console pages: ${failure}`);
    process.exit(1);
}
process.exit(0);
