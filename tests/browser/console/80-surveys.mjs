// Surveys: a survey made through the editor (a rating and a multiple-choice question), its
// preview, launched; `survey shown` / `survey dismissed` / `survey sent` events captured for it;
// the stats and responses on its page equal the API's; a response archived; the survey stopped.

export default async function (t) {
    const { page } = t;
    const base = `/api/projects/${t.projectId}/surveys`;
    const name = `E2E survey ${Date.now()}`;

    await t.open('/surveys');
    await page.getByRole('heading', { name: 'Surveys' }).waitFor();
    await page.locator('.sv-list, .panel .muted').first().waitFor();
    await t.shoot('list');

    // The editor: a rating question and a multiple-choice one.
    await page.getByRole('link', { name: 'New survey' }).click();
    await page.getByRole('heading', { name: 'New survey' }).waitFor();
    await page.getByLabel(/^Name/).fill(name);
    const first = page.locator('fieldset.sv-question-editor').nth(0);
    await first.getByLabel('Type').selectOption('rating');
    await first.getByLabel('Question text').fill('How likely are you to recommend us?');
    await first.getByLabel('Scale').selectOption('10');
    await first.getByLabel('Lower label').fill('Not at all');
    await first.getByLabel('Upper label').fill('Extremely');
    const preview = page.locator('.sv-editor .sv-popover');
    await preview.getByText('How likely are you to recommend us?').waitFor();
    t.check((await preview.locator('.sv-rating-button').count()) === 11, 'the preview draws a 0–10 scale');
    await page.getByRole('button', { name: 'Add multiple choice' }).click();
    const second = page.locator('fieldset.sv-question-editor').nth(1);
    await second.getByLabel('Question text').fill('Which features do you use?');
    await second.getByLabel('Choice 1', { exact: true }).fill('Dashboards');
    await second.getByLabel('Choice 2', { exact: true }).fill('Surveys');
    await second.getByRole('button', { name: 'Add choice' }).click();
    await second.getByLabel('Choice 3', { exact: true }).fill('Flags');
    await page.getByLabel('URL contains').fill('/pricing');
    await page.getByRole('button', { name: 'Add person property' }).click();
    await page.getByLabel('Property 1 name').fill('plan');
    await page.getByLabel('Property 1 value').fill('pro');
    await page.getByLabel('Background').fill('#fff7e6');
    await page.getByLabel('Placeholder').fill('Tell us more');
    // The preview follows: the second question, its three choices, the chosen colour.
    await page.locator('.sv-editor .sv-steps button', { hasText: '2' }).click();
    await preview.getByText('Which features do you use?').waitFor();
    t.check((await preview.locator('.sv-choices li').allTextContents()).join('|') === 'Dashboards|Surveys|Flags', 'the preview lists the choices');
    const background = await preview.evaluate((el) => getComputedStyle(el).backgroundColor);
    t.check(background === 'rgb(255, 247, 230)', `the preview uses the background colour (${background})`);
    await t.shoot('editor');

    // A bad survey shows the API's own error: no name.
    await page.getByLabel(/^Name/).fill('');
    await page.getByRole('button', { name: 'Create survey' }).click();
    await page.locator('.sv-editor [role="alert"]').first().waitFor();
    await t.shoot('editor-error');
    await page.getByLabel(/^Name/).fill(name);
    await page.getByRole('button', { name: 'Create survey' }).click();
    await page.waitForURL(/\/surveys\/[0-9a-f-]{36}$/);
    const id = new URL(page.url()).pathname.split('/').pop();
    await page.getByRole('heading', { name }).waitFor();

    const stored = await t.api('GET', `${base}/${id}/`);
    t.check(stored.name === name, 'the API has the survey');
    const [rating, choice] = stored.questions;
    t.check(stored.questions.length === 2, `two questions stored (${stored.questions.length})`);
    t.check(rating.type === 'rating' && rating.scale === 10 && rating.lowerBoundLabel === 'Not at all' && rating.upperBoundLabel === 'Extremely', `the rating question as made: ${JSON.stringify(rating)}`);
    t.check(choice.type === 'multiple_choice' && JSON.stringify(choice.choices) === JSON.stringify(['Dashboards', 'Surveys', 'Flags']), `the multiple-choice question as made: ${JSON.stringify(choice)}`);
    t.check(stored.conditions?.url === '/pricing', 'the URL condition is stored');
    t.check(stored.targeting_flag !== null, 'the person property made a targeting flag');
    t.check(stored.appearance?.backgroundColor === '#fff7e6', 'the appearance is stored');
    t.check(rating.id && choice.id, 'the API gave the questions ids');
    // The survey's page draws the preview from the stored JSON.
    await page.locator('.sv-detail .sv-popover').getByText('How likely are you to recommend us?').waitFor();
    t.check((await page.locator('[data-status]').first().getAttribute('data-status')) === 'draft', 'a new survey is a draft');

    // Edit through the form: a description for the rating question; the API keeps the ids.
    await page.getByRole('link', { name: 'Edit' }).click();
    await page.getByRole('heading', { name: 'Edit survey' }).waitFor();
    await page.locator('fieldset.sv-question-editor').nth(0).getByLabel('Description').fill('0 is not at all, 10 is extremely');
    await page.getByRole('button', { name: 'Save survey' }).click();
    await page.getByRole('heading', { name }).waitFor();
    const edited = await t.api('GET', `${base}/${id}/`);
    t.check(edited.questions[0].description === '0 is not at all, 10 is extremely' && edited.questions[0].id === rating.id && edited.questions[1].id === choice.id, `the edit is stored: ${JSON.stringify(edited.questions)}`);
    await page.locator('.sv-detail .sv-popover .sv-description').getByText('0 is not at all').waitFor();

    // Launch.
    await page.getByRole('button', { name: 'Launch' }).click();
    await page.locator('[data-status="running"]').first().waitFor();
    const launched = await t.api('GET', `${base}/${id}/`);
    t.check(launched.start_date && !launched.end_date, 'launching set start_date');

    // Events as posthog-js sends them: three shown, one dismissed, two sent (one in two steps
    // under one submission id: its latest event is the submission).
    // Between the launch and now (the survey's window starts at its start_date).
    const start = Date.parse(launched.start_date);
    await new Promise((resolve) => setTimeout(resolve, 400));
    const at = (step) => new Date(start + step * 40).toISOString();
    const common = (who) => ({ distinct_id: who, properties: { $survey_id: id, $survey_name: name, $current_url: 'https://example.com/pricing' } });
    const event = (kind, who, seconds, properties = {}) => ({
        event: kind,
        timestamp: at(seconds),
        ...common(who),
        properties: { ...common(who).properties, ...properties },
    });
    const rid = `$survey_response_${rating.id}`;
    const cid = `$survey_response_${choice.id}`;
    await t.capture(
        [
            event('survey shown', 'sv-e2e-a', 1),
            event('survey shown', 'sv-e2e-b', 2),
            event('survey shown', 'sv-e2e-c', 3),
            event('survey dismissed', 'sv-e2e-c', 4),
            event('survey sent', 'sv-e2e-a', 5, { $survey_submission_id: 'sub-a', [rid]: 9, $survey_completed: false }),
            event('survey sent', 'sv-e2e-a', 6, { $survey_submission_id: 'sub-a', [rid]: 9, [cid]: ['Dashboards', 'Flags'], $survey_completed: true }),
            event('survey sent', 'sv-e2e-b', 7, { $survey_submission_id: 'sub-b', [rid]: 4, [cid]: ['Surveys'], $survey_response: 4 }),
        ],
        undefined,
    );
    const deadline = Date.now() + 30000;
    let stats;
    for (;;) {
        stats = await t.api('GET', `${base}/${id}/stats/`);
        if (stats.stats['survey sent']?.total_count >= 2 && stats.stats['survey shown']?.total_count >= 3 && stats.stats['survey dismissed']?.total_count >= 1) break;
        if (Date.now() > deadline) throw new Error(`the survey's events did not land: ${JSON.stringify(stats)}`);
        await new Promise((resolve) => setTimeout(resolve, 300));
    }

    // Stats and responses on screen equal the API's.
    const checkStats = async (api) => {
        for (const kind of ['survey shown', 'survey dismissed', 'survey sent']) {
            for (const field of ['total_count', 'unique_persons']) {
                const shown = await page.locator(`data[data-stat="${kind}.${field}"]`).getAttribute('value');
                t.check(Number(shown) === api.stats[kind][field], `${kind} ${field}: page ${shown}, API ${api.stats[kind][field]}`);
            }
        }
        for (const rate of ['response_rate', 'dismissal_rate', 'unique_users_response_rate', 'unique_users_dismissal_rate']) {
            const shown = await page.locator(`data[data-stat="${rate}"]`).getAttribute('value');
            t.check(Number(shown) === api.rates[rate], `${rate}: page ${shown}, API ${api.rates[rate]}`);
        }
    };
    // The page loaded its stats at launch (none yet): Refresh asks again.
    await page.getByRole('region', { name: 'Stats' }).getByRole('button', { name: 'Refresh' }).click();
    await page.waitForFunction((n) => document.querySelector('data[data-stat="survey shown.total_count"]')?.getAttribute('value') === String(n), stats.stats['survey shown'].total_count);
    await checkStats(stats);
    const responses = await t.api('GET', `${base}/${id}/responses/?limit=20`);
    t.check(responses.results.length === 2, `two submissions (${responses.results.length})`);
    const rows = page.locator('.sv-responses tbody tr');
    await rows.first().waitFor();
    t.check((await rows.count()) === responses.results.length, 'one row per submission');
    const text = (answer) => (Array.isArray(answer) ? answer.join(', ') : answer === null || answer === undefined ? '' : String(answer));
    for (const response of responses.results) {
        const row = page.locator(`.sv-responses tr[data-uuid="${response.uuid}"]`);
        for (const answer of response.answers) {
            const cell = (await row.locator(`td[data-question="${answer.question_id}"]`).textContent()) ?? '';
            t.check(cell === text(answer.answer), `response ${response.distinct_id}, ${answer.question_text}: page "${cell}", API "${text(answer.answer)}"`);
        }
    }
    const a = responses.results.find((r) => r.distinct_id === 'sv-e2e-a');
    t.check(text(a?.answers.find((x) => x.question_id === choice.id)?.answer) === 'Dashboards, Flags', 'the latest event answers the submission');
    await t.shoot('stats-responses');

    // One question's responses.
    await page.locator('.sv-inline select').selectOption(choice.id);
    // The filtered answer replaces the table: wait for its column count, not a heading both share.
    await page.waitForFunction(() => document.querySelectorAll('.sv-responses th').length === 4, null, { timeout: 20000 })
        .catch(() => {});
    await page.locator('.sv-responses th', { hasText: 'Which features do you use?' }).waitFor();
    t.check((await page.locator('.sv-responses th').count()) === 4, 'one question: one answer column');

    // Archive a response (POST .../responses/<uuid>/archive/), then leave archived ones out.
    await page.locator('.sv-inline select').selectOption('');
    await page.locator('.sv-responses th', { hasText: 'How likely' }).waitFor();
    const target = responses.results[0];
    await page.locator(`.sv-responses tr[data-uuid="${target.uuid}"]`).getByRole('button', { name: 'Archive' }).click();
    await page.locator(`.sv-responses tr[data-uuid="${target.uuid}"]`).getByRole('button', { name: 'Unarchive' }).waitFor();
    const archived = await t.api('GET', `${base}/${id}/archived-response-uuids/`);
    t.check(archived.includes(target.uuid), 'the API lists the archived response');
    await page.getByLabel('Leave out archived responses').check();
    await page.waitForFunction((uuid) => !document.querySelector(`.sv-responses tr[data-uuid="${uuid}"]`), target.uuid);
    const without = await t.api('GET', `${base}/${id}/stats/?exclude_archived=true`);
    await page.waitForFunction((n) => document.querySelector('data[data-stat="survey sent.total_count"]')?.getAttribute('value') === String(n), without.stats['survey sent'].total_count);
    await checkStats(without);
    const left = await t.api('GET', `${base}/${id}/responses/?exclude_archived=true`);
    t.check((await page.locator('.sv-responses tbody tr').count()) === left.results.length, 'the archived response is left out as the API leaves it out');
    await t.shoot('archived');

    // Stop, then the list shows it stopped.
    await page.getByRole('button', { name: 'Stop' }).click();
    await page.locator('[data-status="stopped"]').first().waitFor();
    const stopped = await t.api('GET', `${base}/${id}/`);
    t.check(stopped.end_date !== null, 'stopping set end_date');
    await t.shoot('stopped');
    // Resume (end_date back to null), then stop again.
    await page.getByRole('button', { name: 'Resume' }).click();
    await page.locator('[data-status="running"]').first().waitFor();
    t.check((await t.api('GET', `${base}/${id}/`)).end_date === null, 'resuming cleared end_date');
    await page.getByRole('button', { name: 'Stop' }).click();
    await page.locator('[data-status="stopped"]').first().waitFor();

    await t.open(`/surveys?search=${encodeURIComponent(name)}`);
    await page.locator(`.sv-list tr[data-id="${id}"] [data-status="stopped"]`).waitFor();
    const listed = await t.api('GET', `${base}/?search=${encodeURIComponent(name)}&limit=20`);
    t.check((await page.locator('.sv-list tbody tr').count()) === listed.results.length, 'the search lists what the API finds');

    // A phone: no sideways scrolling.
    await t.open(`/surveys/${id}`);
    await page.locator('data[data-stat="survey sent.total_count"]').waitFor();
    await page.setViewportSize(t.PHONE);
    await page.waitForTimeout(200);
    t.check((await t.overflow()) <= 0, `the survey page fits a phone (${await t.overflow()} px over)`);
    await t.shoot('phone');
    await t.open('/surveys/new');
    await page.getByRole('heading', { name: 'New survey' }).waitFor();
    t.check((await t.overflow()) <= 0, `the editor fits a phone (${await t.overflow()} px over)`);
    await t.shoot('phone-editor');
    await page.setViewportSize(t.WIDE);
}
