// Experiments: one made through the page on a new flag with a mean metric, launched; exposures
// (`$feature_flag_called`) and metric events captured for both variants after the start, with a
// clear lift for `test`; the results on screen (exposures, totals, chance to win, interval bounds)
// must be the API's `ExperimentQuery` answer for the same metric, the daily timeseries the
// API's stored one; very unbalanced exposures must bring the sample-ratio warning when the API
// reports a mismatch; then end, ship `test` and archive, each checked through the API.

const PER_ARM = 60;
const EXTRA_TEST_EXPOSURES = 160;

export default async function (t) {
    const { page } = t;
    const suffix = Date.now().toString(36);
    const name = `Console experiment ${suffix}`;
    const flagKey = `console-exp-${suffix}`;
    const metricEvent = `console_purchase_${suffix}`;
    const base = `/api/projects/${t.projectId}`;

    await t.open('/experiments');
    await page.getByRole('heading', { name: 'Experiments' }).waitFor();
    await page.locator('.experiments .loading').waitFor({ state: 'detached' });
    await t.shoot('list');

    // Create through the form.
    await page.getByRole('button', { name: 'New experiment' }).click();
    await page.getByRole('heading', { name: 'New experiment' }).waitFor();
    // The API's own 400 for a missing name shows under the field.
    await page.getByRole('button', { name: 'Create experiment' }).click();
    await page.locator('.field.invalid .form-error').first().waitFor();
    await t.shoot('form-error');
    await page.locator('input[name=name]').fill(name);
    await page.locator('textarea[name=description]').fill('Buying twice as much in test');
    await page.locator('input[name=feature_flag_key]').fill(flagKey);
    await page.getByLabel('Metric 1 name').fill('Purchases per user');
    await page.getByLabel('Metric 1 type').selectOption('mean');
    await page.getByLabel('Metric 1 event').fill(metricEvent);
    await page.getByLabel('Metric 1 math').selectOption('total');
    await page.locator('select[name=stats_method]').selectOption('bayesian');
    await t.shoot('form');
    await page.getByRole('button', { name: 'Create experiment' }).click();
    await page.getByRole('heading', { name }).waitFor();
    const id = Number(new URL(page.url()).pathname.split('/').pop());
    let experiment = await t.api('GET', `${base}/experiments/${id}/`);
    t.check(experiment.feature_flag_key === flagKey && experiment.status === 'draft', `created: ${JSON.stringify(experiment).slice(0, 400)}`);
    const split = experiment.parameters.feature_flag_variants.map((variant) => `${variant.key}:${variant.rollout_percentage}`).join(',');
    t.check(split === 'control:50,test:50', `variants ${split}`);
    t.check(experiment.metrics.length === 1 && experiment.metrics[0].metric_type === 'mean' && experiment.metrics[0].source.event === metricEvent, `metrics ${JSON.stringify(experiment.metrics)}`);
    await t.shoot('draft');

    // Launch.
    await page.getByRole('button', { name: 'Launch' }).click();
    await page.locator('.page-title .badge[data-status=running]').waitFor();
    experiment = await t.api('GET', `${base}/experiments/${id}/`);
    t.check(experiment.status === 'running' && experiment.start_date && experiment.feature_flag.active, `after launch: ${experiment.status} ${experiment.start_date}`);
    await t.shoot('launched');

    // Exposures and purchases after the start: control buys once for every other user, test twice each.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    const start = Date.parse(experiment.start_date);
    let clock = Math.max(start + 200, Date.now() - 1000);
    const at = () => new Date((clock += 3)).toISOString();
    const events = [];
    const expose = (distinctId, variant) =>
        events.push({ event: '$feature_flag_called', distinct_id: distinctId, timestamp: at(), properties: { $feature_flag: flagKey, $feature_flag_response: variant } });
    for (let index = 0; index < PER_ARM; index += 1) {
        for (const variant of ['control', 'test']) {
            const person = `exp-${suffix}-${variant}-${index}`;
            expose(person, variant);
            const purchases = variant === 'test' ? 2 : index % 2 === 0 ? 1 : 0;
            for (let n = 0; n < purchases; n += 1) events.push({ event: metricEvent, distinct_id: person, timestamp: at(), properties: { amount: 10 } });
        }
    }
    await t.capture(events, undefined);
    await landed(t, `properties['$feature_flag'] = '${flagKey}' OR event = '${metricEvent}'`, events.length);

    const metric = experiment.metrics[0];
    await page.reload();
    await page.getByRole('heading', { name }).waitFor();
    await compareResults(t, id, metric, 'results');

    // The daily timeseries, computed on request, equal to the API's stored days.
    const panel = page.locator('.metric-results[data-metric="0"]');
    await panel.getByRole('button', { name: /Compute days|Recompute days/ }).click();
    const exposuresChart = page.locator(`#daily-exposures-${metric.uuid}`);
    await exposuresChart.locator('table.chart-table tbody data').first().waitFor({ timeout: 30000 });
    const stored = await t.api('GET', `${base}/experiments/${id}/timeseries_results/?metric_uuid=${metric.uuid}&fingerprint=${metric.fingerprint}`);
    const days = Object.keys(stored.timeseries).sort();
    const onScreen = await exposuresChart.locator('table.chart-table tbody tr').evaluateAll((rows) => rows.map((row) => [...row.querySelectorAll('td')].map((cell) => cell.querySelector('data')?.getAttribute('value') ?? null)));
    t.check(onScreen.length === days.length, `${onScreen.length} days on screen, ${days.length} from the API`);
    days.forEach((day, index) => {
        const answer = stored.timeseries[day];
        if (!answer) return;
        const arms = [answer.baseline, ...answer.variant_results].filter(Boolean);
        const want = arms.map((arm) => String(arm.number_of_samples));
        t.check(JSON.stringify(onScreen[index]) === JSON.stringify(want), `day ${day}: exposures on screen ${onScreen[index]}, API ${want}`);
    });
    await t.shoot('timeseries');

    // Very unbalanced exposures: many more people in test. The warning shows when the API says so.
    const more = [];
    for (let index = 0; index < EXTRA_TEST_EXPOSURES; index += 1) {
        more.push({ event: '$feature_flag_called', distinct_id: `exp-${suffix}-extra-${index}`, timestamp: at(), properties: { $feature_flag: flagKey, $feature_flag_response: 'test' } });
    }
    await t.capture(more, undefined);
    await landed(t, `properties['$feature_flag'] = '${flagKey}' OR event = '${metricEvent}'`, events.length + more.length);
    // The experiment's own query sees them too before the page is asked again.
    await exposed(t, id, metric, 'test', PER_ARM + EXTRA_TEST_EXPOSURES);
    // Refresh recomputes: wait for that answer (a new computation time, the panel no longer busy),
    // not for the numbers already on screen.
    const before = await panel.locator('time.computed').getAttribute('datetime');
    await panel.getByRole('button', { name: 'Refresh' }).click();
    await panel.locator(`time.computed:not([datetime="${before}"])`).waitFor({ timeout: 60000 });
    const answer = await compareResults(t, id, metric, 'srm');
    if (answer.sample_ratio_mismatch?.mismatch) {
        const warning = panel.locator('.srm-warning');
        t.check(await warning.isVisible(), 'the API reports a sample ratio mismatch, the page shows no warning');
        const p = await warning.locator('data.srm-p').getAttribute('value');
        t.check(Number(p) === answer.sample_ratio_mismatch.p_value, `SRM p on screen ${p}, API ${answer.sample_ratio_mismatch.p_value}`);
    } else {
        throw new Error(`the API reports no sample ratio mismatch for ${PER_ARM} vs ${PER_ARM + EXTRA_TEST_EXPOSURES}: ${JSON.stringify(answer.sample_ratio_mismatch)}`);
    }

    // Fits a phone.
    await page.setViewportSize(t.PHONE);
    t.check((await t.overflow()) <= 0, 'the experiment page is wider than a phone');
    await t.shoot('phone');
    await page.setViewportSize(t.WIDE);

    // Pause (the flag goes inactive) and resume.
    await page.getByRole('button', { name: 'Pause' }).click();
    await page.locator('.page-title .badge[data-status=paused]').waitFor();
    experiment = await t.api('GET', `${base}/experiments/${id}/`);
    t.check(experiment.status === 'paused' && experiment.feature_flag.active === false, `after pause: ${experiment.status}, flag active ${experiment.feature_flag.active}`);
    await t.shoot('paused');
    await page.getByRole('button', { name: 'Resume' }).click();
    await page.locator('.page-title .badge[data-status=running]').waitFor();
    experiment = await t.api('GET', `${base}/experiments/${id}/`);
    t.check(experiment.status === 'running' && experiment.feature_flag.active === true, `after resume: ${experiment.status}`);

    // End, with a conclusion.
    await page.getByRole('button', { name: 'End', exact: true }).click();
    const endDialog = page.getByRole('dialog', { name: 'End the experiment' });
    await endDialog.locator('select[name=conclusion]').selectOption('won');
    await endDialog.locator('textarea[name=conclusion_comment]').fill('Test sells more');
    await t.shoot('end-dialog');
    await endDialog.getByRole('button', { name: 'End experiment' }).click();
    await page.locator('.page-title .badge[data-status=stopped]').waitFor();
    experiment = await t.api('GET', `${base}/experiments/${id}/`);
    t.check(experiment.status === 'stopped' && experiment.end_date && experiment.conclusion === 'won', `after end: ${experiment.status} ${experiment.end_date} ${experiment.conclusion}`);
    await t.shoot('ended');

    // Ship test: the flag serves it to everyone.
    await page.getByRole('button', { name: 'Ship a variant' }).click();
    const shipDialog = page.getByRole('dialog', { name: 'Ship a variant' });
    await shipDialog.locator('select[name=variant_key]').selectOption('test');
    await shipDialog.getByRole('button', { name: 'Ship variant' }).click();
    await shipDialog.waitFor({ state: 'detached' });
    const flag = await t.api('GET', `${base}/feature_flags/${experiment.feature_flag.id}/`);
    const shipped = flag.filters.multivariate.variants.map((variant) => `${variant.key}:${Number(variant.rollout_percentage)}`).join(',');
    t.check(shipped === 'control:0,test:100', `after shipping test the flag's variants are ${shipped}`);
    await page.locator('.shipped code', { hasText: 'test' }).waitFor();
    await t.shoot('shipped');

    // Archive.
    await page.getByRole('button', { name: 'Archive' }).click();
    await page.getByRole('button', { name: 'Unarchive' }).waitFor();
    experiment = await t.api('GET', `${base}/experiments/${id}/`);
    t.check(experiment.archived === true, 'not archived after Archive');
    await t.open('/experiments?archived=true');
    await page.locator(`tr[data-experiment="${name}"]`).waitFor();
    await t.shoot('archived-list');
    await page.setViewportSize(t.PHONE);
    t.check((await t.overflow()) <= 0, 'the experiment list is wider than a phone');
    await page.setViewportSize(t.WIDE);

    // A second experiment on an existing multivariate flag, chosen in the form.
    const existing = await t.api('POST', `${base}/feature_flags/`, {
        key: `console-exp-existing-${suffix}`,
        filters: {
            groups: [{ properties: [], rollout_percentage: 100 }],
            multivariate: { variants: [{ key: 'control', rollout_percentage: 34 }, { key: 'test', rollout_percentage: 33 }, { key: 'test-2', rollout_percentage: 33 }] },
        },
    });
    await t.open('/experiments/new');
    await page.getByRole('heading', { name: 'New experiment' }).waitFor();
    await page.locator('input[name=name]').fill(`${name} on a flag`);
    await page.getByLabel('An existing flag').check();
    const option = page.locator(`select[name=existing_flag] option[value="${existing.id}"]`);
    await option.waitFor({ state: 'attached' });
    await page.locator('select[name=existing_flag]').selectOption(String(existing.id));
    await page.getByLabel('Metric 1 type').selectOption('funnel');
    await page.getByLabel('Metric 1 steps').fill(metricEvent);
    await t.shoot('existing-flag-form');
    await page.getByRole('button', { name: 'Create experiment' }).click();
    await page.getByRole('heading', { name: `${name} on a flag` }).waitFor();
    const second = await t.api('GET', `${base}/experiments/${Number(new URL(page.url()).pathname.split('/').pop())}/`);
    t.check(second.feature_flag.id === existing.id && second.feature_flag_key === existing.key, `second experiment's flag ${second.feature_flag?.id}, expected ${existing.id}`);
    t.check(second.metrics[0].metric_type === 'funnel' && second.metrics[0].series[0].event === metricEvent, `funnel metric ${JSON.stringify(second.metrics)}`);
    const badges = await page.locator('.split .badge').allTextContents();
    t.check(JSON.stringify(badges) === JSON.stringify(['control 34%', 'test 33%', 'test-2 33%']), `variants on screen ${badges}`);
    await t.shoot('existing-flag');
    // The status filter: the draft is listed under Draft, the first one is not.
    await t.open('/experiments?status=draft');
    await page.locator(`tr[data-experiment="${name} on a flag"]`).waitFor();
    t.check((await page.locator(`tr[data-experiment="${name}"]`).count()) === 0, 'an archived, ended experiment is listed under Draft');
    await t.shoot('draft-list');
}

/** Waits until HogQL counts `count` events matching `where`. */
async function landed(t, where, count) {
    const deadline = Date.now() + 30000;
    for (;;) {
        const answer = await t.api('POST', `/api/projects/${t.projectId}/query/`, {
            query: { kind: 'HogQLQuery', query: `SELECT count() FROM events WHERE ${where}` },
            refresh: 'force_blocking',
        });
        if (answer.results[0][0] >= count) return;
        if (Date.now() > deadline) throw new Error(`${answer.results[0][0]} of ${count} events landed`);
        await new Promise((resolve) => setTimeout(resolve, 300));
    }
}

/** Waits until the API's `ExperimentQuery` for `metric` counts `count` exposures in `variant`. */
async function exposed(t, id, metric, variant, count) {
    const deadline = Date.now() + 30000;
    for (;;) {
        const answer = await t.api('POST', `/api/projects/${t.projectId}/query/`, {
            query: { kind: 'ExperimentQuery', experiment_id: id, metric },
            refresh: 'force_blocking',
        });
        const seen = [answer.baseline, ...answer.variant_results].find((arm) => arm?.key === variant)?.number_of_samples ?? 0;
        if (seen >= count) return;
        if (Date.now() > deadline) throw new Error(`the API counts ${seen} of ${count} exposures in ${variant}`);
        await new Promise((resolve) => setTimeout(resolve, 300));
    }
}

/** The numbers in the page's results table for the first metric equal the API's for the same node. */
async function compareResults(t, id, metric, shot) {
    const { page } = t;
    const panel = page.locator('.metric-results[data-metric="0"]');
    await page.locator('.metric-results[data-metric="0"][aria-busy="false"] tr[data-variant="test"] data.exposures').waitFor({ timeout: 60000 });
    const answer = await t.api('POST', `/api/projects/${t.projectId}/query/`, {
        query: { kind: 'ExperimentQuery', experiment_id: id, metric },
        refresh: 'force_blocking',
    });
    const arms = [answer.baseline, ...answer.variant_results];
    t.check(arms.every((arm) => arm.validation_failures.length === 0), `validation failures: ${JSON.stringify(arms.map((arm) => arm.validation_failures))}`);
    const cell = async (variant, name) => {
        const data = panel.locator(`tr[data-variant="${variant}"] data.${name}`);
        return (await data.count()) ? data.getAttribute('value') : null;
    };
    for (const arm of arms) {
        const exposures = await cell(arm.key, 'exposures');
        const value = await cell(arm.key, 'value');
        t.check(Number(exposures) === arm.number_of_samples, `${arm.key}: exposures on screen ${exposures}, API ${arm.number_of_samples}`);
        t.check(Number(value) === arm.sum, `${arm.key}: value on screen ${value}, API ${arm.sum}`);
    }
    const test = answer.variant_results.find((arm) => arm.key === 'test');
    const bayesian = answer.stats_method === 'bayesian';
    const chance = await cell('test', bayesian ? 'chance-to-win' : 'p-value');
    const want = bayesian ? test.chance_to_win : test.p_value;
    t.check(chance !== null && Number(chance) === want, `test: ${bayesian ? 'chance to win' : 'p-value'} on screen ${chance}, API ${want}`);
    const bounds = bayesian ? test.credible_interval : test.confidence_interval;
    const lower = await cell('test', 'lower');
    const upper = await cell('test', 'upper');
    t.check(Number(lower) === bounds[0] && Number(upper) === bounds[1], `test: interval on screen [${lower}, ${upper}], API ${JSON.stringify(bounds)}`);
    const shownChance = (await panel.locator('tr[data-variant="test"] data.chance-to-win').textContent()).trim();
    t.check(shownChance === `${(want * 100).toFixed(1)}%`, `chance to win written ${shownChance}`);
    t.check(test.sum / test.number_of_samples > answer.baseline.sum / answer.baseline.number_of_samples, 'test should beat control');
    t.check((await panel.locator('.interval-chart rect.interval-bar').count()) === answer.variant_results.length, 'one interval bar per variant');
    t.check((await panel.locator('.srm-warning').count()) === (answer.sample_ratio_mismatch?.mismatch ? 1 : 0), 'the SRM warning does not follow the API');
    await t.shoot(shot);
    return answer;
}
