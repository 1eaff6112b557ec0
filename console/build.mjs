// Builds the console into dist/: index.html and content-hashed assets/ (JavaScript, CSS, icon),
// byte for byte the same from the same sources and package-lock.json, so the committed dist/
// can be checked against a fresh build (scripts/test fails when `git status -- console/dist`
// shows a difference). Files whose bytes did not change are not rewritten, so a rebuild of the
// same sources leaves their times alone and cargo does not re-embed them.
// Usage: npm run build (type-checks first), or node build.mjs [--out <folder>] (a build elsewhere,
// for `ANALYTICS_CONSOLE_DIR`: see docs/console.md).

import { createHash } from 'node:crypto';
import { mkdir, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as esbuild from 'esbuild';

const outFlag = process.argv.indexOf('--out');
const OUT = outFlag >= 0 ? resolve(process.argv[outFlag + 1]) : 'dist';
process.chdir(dirname(fileURLToPath(import.meta.url)));
const ASSETS = 'assets';

const result = await esbuild.build({
    entryPoints: ['src/main.tsx'],
    outdir: join(OUT, ASSETS),
    entryNames: '[name]-[hash]',
    // Each section's page is its own file, loaded when the section is first opened.
    chunkNames: 'chunk-[hash]',
    splitting: true,
    bundle: true,
    format: 'esm',
    // What the console supports: browsers of the last few years (ES modules, ResizeObserver).
    target: ['chrome100', 'firefox100', 'safari15', 'edge100'],
    jsx: 'automatic',
    jsxImportSource: 'preact',
    minify: true,
    sourcemap: false,
    legalComments: 'eof',
    charset: 'utf8',
    define: { 'process.env.NODE_ENV': '"production"' },
    write: false,
    metafile: true,
    logLevel: 'warning',
});

/** Every file of the build, by its path under dist/. */
const files = new Map();
const outRoot = resolve(OUT);
for (const file of result.outputFiles) {
    const path = file.path.slice(outRoot.length + 1);
    files.set(path, Buffer.from(file.contents));
}

// A stylesheet imported by a lazily loaded page would be a file nobody loads: every stylesheet is
// imported by src/main.tsx.
const strayCss = Object.entries(result.metafile.outputs).filter(([path, meta]) => path.endsWith('.css') && !meta.entryPoint && !path.includes('/main-'));
if (strayCss.length) throw new Error(`stylesheets imported outside src/main.tsx are never loaded: ${strayCss.map(([path]) => path).join(', ')}`);

/** The public path of the entry's output that ends with `extension` (the script, the stylesheet). */
function output(extension) {
    const found = Object.entries(result.metafile.outputs)
        .filter(([path, meta]) => meta.entryPoint === 'src/main.tsx' || (extension === '.css' && path.endsWith('.css')))
        .map(([path]) => relative(OUT, path))
        .filter((path) => path.endsWith(extension));
    if (found.length !== 1) throw new Error(`expected one ${extension} output, found ${JSON.stringify(found)}`);
    return `/${found[0].split(sep).join('/')}`;
}

// The icon is not imported by any script, so it is hashed here.
const icon = await readFile('src/favicon.svg');
const iconPath = `${ASSETS}/favicon-${createHash('sha256').update(icon).digest('hex').slice(0, 8)}.svg`;

const html = (await readFile('src/index.html', 'utf8'))
    .replace('{{script}}', output('.js'))
    .replace('{{style}}', output('.css'))
    .replace('{{icon}}', `/${iconPath}`);
if (html.includes('{{')) throw new Error('index.html has a placeholder left');
files.set(iconPath, icon);
files.set('index.html', Buffer.from(html));

// Write what changed, remove what the build no longer makes.
await mkdir(join(OUT, ASSETS), { recursive: true });
for (const [path, contents] of files) {
    const target = join(OUT, path);
    const current = await readFile(target).catch(() => null);
    if (!current || !current.equals(contents)) await writeFile(target, contents);
}
for (const entry of await readdir(OUT, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const path = join(entry.parentPath, entry.name).slice(OUT.length + 1);
    if (!files.has(path)) await rm(join(OUT, path));
}
