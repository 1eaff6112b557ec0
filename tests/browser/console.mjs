// The console (what `analytics serve` serves at `/`) in Debian's headless Chromium, driven as a
// person uses it: log in (a wrong password first), read Home, watch the live tail, log out, log in
// again with a second factor. Run by tests/browser/test_console.py, which knows what was sent and
// what the API answers; the two talk in JSON lines: this script prints `{"step": ...}` with what
// the page shows, and reads the harness's answer (what to type next) from standard input.
//
// Usage: node console.mjs <server url> <email> <password> <screenshot folder>
// Fails (exit 1, reasons on stderr) on a page error, a console error other than the API's
// expected 4xx answers, a Content-Security-Policy violation, or any request to another origin.

import { mkdir } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import { join } from 'node:path';
import { chromium } from 'playwright-core';

const [server, email, password, shots] = process.argv.slice(2);
if (!server || !email || !password || !shots) {
    console.error('usage: node console.mjs <server url> <email> <password> <screenshot folder>');
    process.exit(2);
}
const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
// As capture.mjs: no background calls to Google's hosts, no sandbox (CI runs as root).
const CHROMIUM_ARGS = [
    '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync',
];
const WIDE = { width: 1280, height: 900 };
const PHONE = { width: 390, height: 844 };
const origin = new URL(server).origin;

const input = createInterface({ input: process.stdin })[Symbol.asyncIterator]();
/** Tells the harness what happened and waits for its answer. */
async function step(name, detail = {}) {
    console.log(JSON.stringify({ step: name, ...detail }));
    const { value, done } = await input.next();
    if (done) throw new Error(`the harness stopped answering after ${name}`);
    const answer = JSON.parse(value);
    if (answer.error) throw new Error(`the harness refused ${name}: ${answer.error}`);
    return answer;
}

const failures = [];
const screenshots = [];
await mkdir(shots, { recursive: true });

async function shoot(page, name) {
    const path = join(shots, `${name}.png`);
    await page.screenshot({ path, fullPage: true });
    screenshots.push(path);
}

/** The numbers Home shows, read from the page: machine value and the text a person sees. */
async function readHome(page) {
    return page.evaluate(() => {
        const stat = (id) => {
            const element = document.getElementById(id);
            return { value: Number(element.getAttribute('value')), text: element.textContent };
        };
        const rows = (id) =>
            [...document.querySelectorAll(`#${id} tbody tr`)].map((row) => {
                const data = row.querySelector('data');
                return { label: row.firstElementChild.textContent, value: Number(data.getAttribute('value')), text: data.textContent };
            });
        return {
            events: stat('total-events'),
            users: stat('unique-users'),
            daily: rows('daily-table'),
            top_events: rows('top-events'),
            top_pages: rows('top-pages'),
            user_email: document.getElementById('user-email')?.textContent,
            overflow: document.documentElement.scrollWidth - window.innerWidth,
        };
    });
}

const browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
let page = null;
try {
    const context = await browser.newContext({ viewport: WIDE });
    page = await context.newPage();
    page.setDefaultTimeout(20000);
    page.on('pageerror', (error) => failures.push(`page error: ${error.message}`));
    page.on('console', (message) => {
        const text = message.text();
        if (/Content Security Policy|Refused to/i.test(text)) failures.push(`CSP: ${text}`);
        // The API's 400 and 401 answers the page expects (not logged in yet, a wrong password or
        // code, the 2FA step) show up as failed resource loads.
        else if (message.type() === 'error' && !/Failed to load resource: the server responded with a status of 40[01]/.test(text))
            failures.push(`console ${message.type()}: ${text}`);
    });
    page.on('request', (request) => {
        const url = new URL(request.url());
        if (url.origin !== origin) failures.push(`a request to another origin: ${request.url()}`);
    });

    // A fresh browser opening the console lands on the login page.
    const opened = await page.goto(`${server}/`);
    const policy = opened.headers()['content-security-policy'] ?? '';
    if (!policy.includes("default-src 'self'")) failures.push(`index.html's CSP: ${policy}`);
    await page.getByRole('heading', { name: 'Log in' }).waitFor();
    if (new URL(page.url()).pathname !== '/login') failures.push(`logged out, the page is ${page.url()}`);
    await shoot(page, '01-login');

    // A wrong password: the API's words on the page.
    await page.getByLabel('Email').fill(email);
    await page.getByLabel('Password').fill(`${password}-wrong`);
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.getByRole('alert').filter({ hasText: 'Invalid email or password.' }).waitFor();
    await shoot(page, '02-login-wrong-password');

    // The right one: Home, with every number loaded.
    await page.getByLabel('Password').fill(password);
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.getByRole('heading', { name: 'Last 30 days' }).waitFor();
    await page.locator('#total-events').waitFor();
    await page.locator('#unique-users').waitFor();
    await page.locator('#daily-table').waitFor({ state: 'attached' });
    await page.locator('#top-events').waitFor();
    await page.locator('#top-pages').waitFor();
    await page.locator('#live-tail').waitFor();
    await page.locator('.chart-canvas canvas').waitFor();
    await shoot(page, '03-home-1280');
    const wide = await readHome(page);
    const live = await step('home', { screen: wide, path: new URL(page.url()).pathname });

    // One more event: it appears at the top of the live tail.
    const newest = page.locator('#live-tail tbody tr').first();
    await page.locator('#live-tail tbody tr', { hasText: live.distinct_id }).waitFor();
    const first = await newest.evaluate((row) => ({
        event: row.querySelector('.event').textContent,
        distinct_id: row.querySelector('.who').textContent,
        url: row.querySelector('.url').textContent,
    }));

    // A phone's width: the same page, nothing wider than the screen.
    await page.setViewportSize(PHONE);
    await page.waitForTimeout(300);
    await shoot(page, '04-home-390');
    const narrow = await readHome(page);

    // Log out: back to the login page, and the session is gone.
    await page.setViewportSize(WIDE);
    await page.getByRole('button', { name: 'Log out' }).click();
    await page.getByRole('heading', { name: 'Log in' }).waitFor();
    const me = await page.evaluate(async () => (await fetch('/api/users/@me/')).status);
    const twoFactor = await step('logged_out', { live_first: first, phone: narrow, me_after_logout: me });

    // 2FA is on now: the password leads to the code step; a wrong code is refused in words.
    await page.getByLabel('Email').fill(email);
    await page.getByLabel('Password').fill(password);
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.getByRole('heading', { name: 'Two-factor authentication' }).waitFor();
    await shoot(page, '05-2fa-step');
    await page.getByLabel('Authentication code').fill(twoFactor.wrong_code);
    await page.getByRole('button', { name: 'Verify' }).click();
    await page.getByRole('alert').filter({ hasText: 'Invalid authentication code' }).waitFor();
    await shoot(page, '06-2fa-wrong-code');

    // The right code (asked for now, so it is the current one): Home.
    const { code } = await step('code_step');
    await page.getByLabel('Authentication code').fill(code);
    await page.getByRole('button', { name: 'Verify' }).click();
    await page.getByRole('heading', { name: 'Last 30 days' }).waitFor();
    for (const id of ['total-events', 'unique-users', 'top-events', 'top-pages', 'live-tail']) await page.locator(`#${id}`).waitFor();
    await shoot(page, '07-home-after-2fa');
    const after = await readHome(page);
    console.log(JSON.stringify({ step: 'done', screen: after, path: new URL(page.url()).pathname, screenshots, failures }));
} catch (error) {
    failures.push(`${error.message}`);
    if (page) await shoot(page, '99-failure').catch(() => {});
    console.log(JSON.stringify({ step: 'failed', screenshots, failures }));
} finally {
    await browser.close();
}
if (failures.length) {
    for (const failure of failures) console.error(`console: ${failure}`);
    process.exit(1);
}
process.exit(0);
