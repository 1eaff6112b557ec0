// posthog-js (the npm package's browser bundle) in Debian's headless Chromium, on a page served from
// another origin than the API, as a customer's site runs it. Drives the page, records every request
// the browser makes to the API (preflights included, through the DevTools protocol: Playwright's own
// request events do not show them), and fails on anything a browser would refuse.
//
// Usage: node capture.mjs <api host, e.g. http://127.0.0.1:8000> <project token> [flag keys, comma-separated]
// Prints one JSON line: {"page_origin", "anon_distinct_id", "requests": [...], "flags", "flags_after_identify"}.
// With flag keys, the page reads each through posthog.getFeatureFlag once /flags has answered (which
// sends `$feature_flag_called`), and again for `user-1` after identify reloads them.
// Run by tests/browser/test_browser_capture.py, which checks the lake.

import http from 'node:http';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { chromium } from 'playwright-core';

const [apiHost, token, flagKeysArgument] = process.argv.slice(2);
const flagKeys = (flagKeysArgument ?? '').split(',').filter(Boolean);
if (!apiHost || !token) {
    console.error('usage: node capture.mjs <api host> <project token>');
    process.exit(2);
}
const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
// Without the background-networking flags Chromium keeps calling Google's hosts, which this
// machine's closed network refuses; --no-sandbox because CI runs as root.
const CHROMIUM_ARGS = [
    '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync',
];
const CAPTURE_PATH = /^\/(e|i\/v0\/e|batch|capture|track)\/?$/;
const FLAGS_PATH = /^\/(flags|decide)\/?$/;
const FLAGS_LOAD_MS = 15000;
// Longer than posthog-js's batch flush interval (3 s): no capture request for this long means done.
const QUIET_MS = 4000;
const DEADLINE_MS = 30000;

const require = createRequire(import.meta.url);
// The same bundle the snippet loads from PostHog's CDN, from the pinned npm package.
const bundle = await readFile(require.resolve('posthog-js/dist/array.full.js'));

function page(apiHost, token) {
    const config = {
        api_host: apiHost,
        // Headless Chromium says "HeadlessChrome" in its user agent; posthog-js drops bots' events.
        opt_out_useragent_filter: true,
    };
    return `<!doctype html>
<html><head><meta charset="utf-8"><title>shop</title>
<script src="/posthog.js"></script>
<script>posthog.init(${JSON.stringify(token)}, ${JSON.stringify(config)});
// Every answer of /flags, with the distinct id it was for (no getFeatureFlag: that sends an event).
window.flagLoads = [];
posthog.onFeatureFlags(function (flags, variants, context) {
    window.flagLoads.push({ distinct_id: posthog.get_distinct_id(), variants: variants,
                            errors_loading: !!(context && context.errorsLoading) });
});
</script>
</head><body><h1>A page of another origin</h1></body></html>`;
}

const pageServer = http.createServer((request, response) => {
    if (request.url === '/posthog.js') {
        response.writeHead(200, { 'content-type': 'text/javascript' });
        response.end(bundle);
    } else if (request.url === '/') {
        response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
        response.end(page(apiHost, token));
    } else {
        response.writeHead(404);
        response.end();
    }
});
await new Promise((resolve) => pageServer.listen(0, '127.0.0.1', resolve));
// `localhost` against the API's `127.0.0.1`: another site, not only another port.
const pageOrigin = `http://localhost:${pageServer.address().port}`;
const apiOrigin = new URL(apiHost).origin;
if (pageOrigin === apiOrigin) throw new Error('the page must be of another origin');

const failures = [];
const requests = new Map(); // DevTools request id -> what happened to it
const browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
let anonDistinctId = null;
let flagsSeen = null;
let flagsAfterIdentify = null;
try {
    const context = await browser.newContext();
    const tab = await context.newPage();
    // A customer's console stays clean: no CORS complaint, no error from posthog-js.
    tab.on('console', (message) => {
        // (The page's own server has no favicon: its 404 is not the SDK's.)
        const from = message.location().url ?? '';
        if (from.startsWith(`${pageOrigin}/favicon`)) return;
        if (/CORS|Access-Control/i.test(message.text()) || message.type() === 'error')
            failures.push(`console ${message.type()}: ${message.text()} (${from})`);
    });
    tab.on('pageerror', (error) => failures.push(`page error: ${error.message}`));

    const devtools = await context.newCDPSession(tab);
    await devtools.send('Network.enable');
    devtools.on('Network.requestWillBeSent', ({ requestId, request, type }) => {
        const url = new URL(request.url);
        if (url.origin !== apiOrigin) return;
        // A redirect reuses the id; keep the first hop's record.
        if (requests.has(requestId)) return;
        requests.set(requestId, {
            method: request.method, path: url.pathname, type, started: Date.now(),
            content_type: request.headers['Content-Type'] ?? request.headers['content-type'] ?? null,
        });
    });
    devtools.on('Network.responseReceived', ({ requestId, response }) => {
        const record = requests.get(requestId);
        if (!record) return;
        const headers = Object.fromEntries(
            Object.entries(response.headers).map(([name, value]) => [name.toLowerCase(), value]));
        record.status = response.status;
        record.allow_origin = headers['access-control-allow-origin'] ?? null;
        record.allow_credentials = headers['access-control-allow-credentials'] ?? null;
        record.allow_headers = headers['access-control-allow-headers'] ?? null;
    });
    devtools.on('Network.loadingFinished', ({ requestId }) => {
        const record = requests.get(requestId);
        if (record) record.done = true;
    });
    devtools.on('Network.loadingFailed', ({ requestId, errorText, corsErrorStatus }) => {
        const record = requests.get(requestId);
        if (!record) return;
        record.done = true;
        record.error = corsErrorStatus ? `CORS ${corsErrorStatus.corsError}` : errorText;
    });

    await tab.goto(`${pageOrigin}/`);
    await tab.waitForFunction(() => window.posthog && window.posthog.__loaded);
    anonDistinctId = await tab.evaluate(() => posthog.get_distinct_id());
    if (flagKeys.length) {
        // What a site does with a flag: wait for them, then ask (each call sends `$feature_flag_called`).
        try {
            await tab.waitForFunction(() => window.flagLoads.length > 0, null, { timeout: FLAGS_LOAD_MS });
            flagsSeen = await tab.evaluate((keys) => {
                const values = {};
                const payloads = {};
                for (const key of keys) {
                    values[key] = posthog.getFeatureFlag(key) ?? null;
                    payloads[key] = posthog.getFeatureFlagPayload(key) ?? null;
                }
                return { distinct_id: posthog.get_distinct_id(), values, payloads, loads: window.flagLoads };
            }, flagKeys);
        } catch (error) {
            failures.push(`posthog-js loaded no flags: ${error.message}`);
        }
    }
    // What a site does: a custom event, then the user logs in.
    await tab.evaluate(() => {
        posthog.capture('browser check event', { plan: 'pro', items: 3 });
        posthog.identify('user-1', { email: 'ada@example.com' });
    });
    // A request of the page's own with credentials and a JSON body: a preflight, then a POST the
    // browser hands to the page only if the answer names this origin and allows credentials.
    const fetched = await tab.evaluate(async ({ apiHost, token }) => {
        try {
            const response = await fetch(`${apiHost}/i/v0/e/`, {
                method: 'POST',
                credentials: 'include',
                headers: { 'Content-Type': 'application/json', 'X-Browser-Check': '1' },
                body: JSON.stringify({ api_key: token, event: 'browser check fetch', distinct_id: 'user-1' }),
            });
            return { status: response.status, body: await response.text() };
        } catch (error) {
            return { error: String(error) };
        }
    }, { apiHost, token });
    if (fetched.error || fetched.status !== 200) failures.push(`credentialed fetch: ${JSON.stringify(fetched)}`);
    if (flagKeys.length) {
        // identify reloads the flags for the new distinct id.
        try {
            await tab.waitForFunction(
                () => window.flagLoads.some((load) => load.distinct_id === 'user-1' && !load.errors_loading),
                null, { timeout: FLAGS_LOAD_MS });
            flagsAfterIdentify = await tab.evaluate(
                () => window.flagLoads.filter((load) => load.distinct_id === 'user-1').at(-1));
        } catch (error) {
            failures.push(`posthog-js reloaded no flags after identify: ${error.message}`);
        }
    }

    // Wait for posthog-js's queue to drain: every capture request answered, none for a while.
    const start = Date.now();
    for (;;) {
        const watched = [...requests.values()].filter((r) => CAPTURE_PATH.test(r.path) || FLAGS_PATH.test(r.path));
        const pending = watched.some((r) => !r.done);
        const last = Math.max(start, ...watched.map((r) => r.started));
        if (!pending && Date.now() - last >= QUIET_MS) break;
        if (Date.now() - start > DEADLINE_MS) {
            failures.push('capture requests still pending after 30 s');
            break;
        }
        await new Promise((resolve) => setTimeout(resolve, 100));
    }
} finally {
    await browser.close();
    pageServer.close();
}

const log = [...requests.values()].map(({ started, done, ...rest }) => rest);
const capture = log.filter((r) => CAPTURE_PATH.test(r.path));
const flagRequests = log.filter((r) => FLAGS_PATH.test(r.path));
// /flags answers the page like capture does: its origin, credentials allowed.
for (const request of [...capture, ...flagRequests]) {
    const what = `${request.method} ${request.path}`;
    if (request.error) failures.push(`${what}: ${request.error}`);
    else if (request.method === 'OPTIONS' ? !(request.status >= 200 && request.status < 300) : request.status !== 200)
        failures.push(`${what}: status ${request.status}`);
    if (request.allow_origin !== pageOrigin) failures.push(`${what}: Access-Control-Allow-Origin ${request.allow_origin}`);
    if (request.allow_credentials !== 'true') failures.push(`${what}: Access-Control-Allow-Credentials ${request.allow_credentials}`);
}
// Nothing the SDK asks of the API fails (remote config, flags, surveys, capture).
for (const request of log) {
    if (request.error || request.status >= 400)
        failures.push(`${request.method} ${request.path}: ${request.error ?? `status ${request.status}`}`);
}
// posthog-js loads its remote config as a script first, and needs no JSON fallback.
const remoteConfig = log.filter((r) => r.path.startsWith(`/array/${token}/config`));
if (!remoteConfig.some((r) => r.path.endsWith('/config.js') && r.status === 200))
    failures.push(`posthog-js loaded no remote config: ${JSON.stringify(remoteConfig)}`);
const posts = capture.filter((r) => r.method === 'POST' && !r.error);
if (posts.length === 0) failures.push('the browser sent no capture request');
// posthog-js sends gzip as text/plain (a "simple" request: no preflight) or JSON (preflighted),
// depending on its remote config; the page's own credentialed JSON fetch always needs one.
if (flagKeys.length && !flagRequests.some((r) => r.method === 'POST' && r.status === 200))
    failures.push('posthog-js sent no /flags request that was answered');
const preflights = capture.filter((r) => r.method === 'OPTIONS');
if (!preflights.some((r) => r.path === '/i/v0/e/')) failures.push('no preflight to /i/v0/e/ was seen');

console.log(JSON.stringify({
    page_origin: pageOrigin, anon_distinct_id: anonDistinctId, requests: log,
    flags: flagsSeen, flags_after_identify: flagsAfterIdentify,
}));
if (failures.length) {
    for (const failure of failures) console.error(`browser: ${failure}`);
    process.exit(1);
}
