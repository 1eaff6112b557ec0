// Every section from the navigation: its page opens (a heading), the address follows, a reload of
// that address opens the same page, and it fits a phone's width.

export default async function (t) {
    const { page } = t;
    const links = await page.getByRole('navigation', { name: 'Sections' }).getByRole('link').all();
    const sections = [];
    for (const link of links) sections.push({ label: (await link.textContent()).trim(), href: await link.getAttribute('href') });
    t.check(sections.length >= 11, `the navigation lists ${JSON.stringify(sections)}`);
    for (const { label, href } of sections) {
        await page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: label, exact: true }).click();
        await page.locator('main h1').first().waitFor();
        const path = new URL(page.url()).pathname;
        t.check(path === href, `${label}: the address is ${path}, the link ${href}`);
        const current = await page.locator('nav.sidebar a.current').textContent();
        t.check(current.trim() === label, `${label}: the navigation marks ${current}`);
    }
    // A reload of a section's address (a bookmark) opens it again.
    await page.goto(`${t.server}/settings`);
    await page.locator('main h1').first().waitFor();
    t.check((await page.locator('nav.sidebar a.current').textContent()).trim() === 'Settings', 'a reload of /settings');
    // An unknown console path says so.
    await t.open('/insightz');
    await page.getByRole('heading', { name: 'Not found' }).waitFor();
    await page.setViewportSize(t.PHONE);
    await t.open('/');
    await page.locator('#total-events').waitFor();
    t.check((await t.overflow()) <= 0, `Home is ${await t.overflow()} px too wide at 390 px`);
    await t.shoot('home-390');
}
