// Paths insights (`PathsQuery`): the most travelled steps between pages, screens or events, as
// columns of steps joined by bands as wide as the persons who went that way (an SVG drawn
// here), and the same edges as a list. An edge opens the persons who took it.

import { useMemo } from 'preact/hooks';
import { formatCount } from '../format';
import { PALETTE } from '../series-chart';
import type { EditorProps, InsightKind, ResultProps } from './kind';
import { Control, DateRange, ResultRoot, answered, composing, duration, list, record, withFilter } from './kind-parts';

const TYPES: [string, string][] = [
    ['$pageview', 'Page views'],
    ['$screen', 'Screen views'],
    ['custom_event', 'Custom events'],
];

function Editor({ query, onChange }: EditorProps) {
    const filter = record(query.pathsFilter);
    const types = list(filter.includeEventTypes).map(String);
    const text = (name: string) => (typeof filter[name] === 'string' ? (filter[name] as string) : '');
    const set = (name: string, value: unknown) => onChange(withFilter(query, 'pathsFilter', name, value));
    return (
        <div class="kind-editor">
            <fieldset class="kind-row kind-fieldset">
                <legend class="kind-label">Include</legend>
                {TYPES.map(([value, label]) => (
                    <label key={value} class="kind-check">
                        <input
                            type="checkbox"
                            checked={types.includes(value)}
                            onChange={(event) =>
                                set('includeEventTypes', event.currentTarget.checked ? [...types, value] : types.filter((one) => one !== value))
                            }
                        />
                        {label}
                    </label>
                ))}
            </fieldset>
            <div class="kind-row">
                <Control label="Starts at" wide>
                    <input
                        class="kind-input"
                        value={text('startPoint')}
                        placeholder="Any page or event"
                        onChange={(event) => set('startPoint', event.currentTarget.value.trim() || undefined)}
                    />
                </Control>
                <Control label="Ends at" wide>
                    <input
                        class="kind-input"
                        value={text('endPoint')}
                        placeholder="Any page or event"
                        onChange={(event) => set('endPoint', event.currentTarget.value.trim() || undefined)}
                    />
                </Control>
                <Control label="Steps">
                    <input
                        type="number"
                        class="kind-number-input"
                        min={2}
                        value={typeof filter.stepLimit === 'number' ? filter.stepLimit : 5}
                        onChange={(event) => {
                            const typed = event.currentTarget.value;
                            set('stepLimit', typed === '' ? undefined : Number(typed));
                        }}
                    />
                </Control>
                <DateRange query={query} onChange={onChange} />
            </div>
        </div>
    );
}

interface Edge {
    source: string;
    target: string;
    value: number;
    time: number | null;
}

/** `3_/pricing` → step 3, `/pricing`. */
function split(key: string): { step: number; name: string } {
    const match = /^(\d+)_(.*)$/s.exec(key);
    return match ? { step: Number(match[1]), name: match[2]! } : { step: 1, name: key };
}

interface Node {
    key: string;
    name: string;
    step: number;
    value: number;
    y: number;
    height: number;
    inUsed: number;
    outUsed: number;
}

const COLUMN = 230;
const NODE_WIDTH = 10;
const GAP = 18;
/** The room after the last column, for its labels. */
const TAIL = 220;

/** A step's name as a label: a URL without its scheme and host (the whole name in the tooltip). */
function short(name: string): string {
    const path = /^https?:\/\/[^/]+(\/.*)?$/.exec(name);
    const shown = path ? path[1] || '/' : name;
    return shown.length > 26 ? `${shown.slice(0, 25)}…` : shown;
}

/** Columns of steps joined by bands, laid out here (display only: widths follow the counts). */
function PathsChart({ edges, onEdge }: { edges: Edge[]; onEdge: ((edge: Edge) => void) | null }) {
    const layout = useMemo(() => {
        const nodes = new Map<string, Node>();
        const node = (key: string) => {
            let found = nodes.get(key);
            if (!found) {
                const { step, name } = split(key);
                found = { key, name, step, value: 0, y: 0, height: 0, inUsed: 0, outUsed: 0 };
                nodes.set(key, found);
            }
            return found;
        };
        const incoming = new Map<string, number>();
        const outgoing = new Map<string, number>();
        for (const edge of edges) {
            node(edge.source);
            node(edge.target);
            outgoing.set(edge.source, (outgoing.get(edge.source) ?? 0) + edge.value);
            incoming.set(edge.target, (incoming.get(edge.target) ?? 0) + edge.value);
        }
        for (const one of nodes.values()) one.value = Math.max(incoming.get(one.key) ?? 0, outgoing.get(one.key) ?? 0);
        const steps = [...new Set([...nodes.values()].map((one) => one.step))].sort((a, b) => a - b);
        const columns = steps.map((step) => [...nodes.values()].filter((one) => one.step === step).sort((a, b) => b.value - a.value));
        const most = Math.max(1, ...columns.map((column) => column.reduce((sum, one) => sum + one.value, 0) + GAP * (column.length - 1) * 0));
        const tallest = Math.max(1, ...columns.map((column) => column.length));
        // About 44 px a step in the fullest column, 320 at most: a lone path stays a slim band.
        const height = Math.min(320, Math.max(90, tallest * 44));
        const scale = (height - GAP * (tallest - 1)) / most;
        columns.forEach((column) => {
            let y = 0;
            for (const one of column) {
                one.y = y;
                one.height = Math.max(2, one.value * scale);
                y += one.height + GAP;
            }
        });
        const x = (step: number) => steps.indexOf(step) * COLUMN;
        const bands = edges.map((edge, index) => {
            const from = nodes.get(edge.source)!;
            const to = nodes.get(edge.target)!;
            const width = Math.max(1, edge.value * scale);
            const y1 = from.y + from.outUsed + width / 2;
            const y2 = to.y + to.inUsed + width / 2;
            from.outUsed += width;
            to.inUsed += width;
            const x1 = x(from.step) + NODE_WIDTH;
            const x2 = x(to.step);
            const middle = (x1 + x2) / 2;
            return { edge, index, width, path: `M${x1},${y1} C${middle},${y1} ${middle},${y2} ${x2},${y2}` };
        });
        const width = Math.max(0, steps.length - 1) * COLUMN + TAIL;
        return { nodes: [...nodes.values()], bands, x, width, height };
    }, [edges]);
    return (
        <div class="kind-paths-scroll">
            <svg class="kind-paths" viewBox={`-4 -20 ${layout.width + 8} ${layout.height + 24}`} width={layout.width + 8} height={layout.height + 24} role="img" aria-label="Paths">
                {layout.bands.map((band) => (
                    <path
                        key={band.index}
                        d={band.path}
                        fill="none"
                        stroke={PALETTE[band.index % PALETTE.length]}
                        stroke-opacity="0.35"
                        stroke-width={band.width}
                        class={onEdge ? 'kind-band clickable' : 'kind-band'}
                        onClick={onEdge ? () => onEdge(band.edge) : undefined}
                    >
                        <title>
                            {split(band.edge.source).name} → {split(band.edge.target).name}: {formatCount(band.edge.value)}
                        </title>
                    </path>
                ))}
                {layout.nodes.map((one) => (
                    <g key={one.key}>
                        <rect x={layout.x(one.step)} y={one.y} width={NODE_WIDTH} height={one.height} fill="#1d2433" rx="2" />
                        <text x={layout.x(one.step)} y={one.y - 6} class="kind-paths-label">
                            <title>{one.name}</title>
                            {short(one.name)} · {formatCount(one.value)}
                        </text>
                    </g>
                ))}
            </svg>
        </div>
    );
}

function Result({ query: given, response, onPersons, compact }: ResultProps) {
    const query = answered(given, response);
    const edges: Edge[] = useMemo(
        () =>
            list(response.results).map((item) => {
                const edge = record(item);
                return {
                    source: String(edge.source ?? ''),
                    target: String(edge.target ?? ''),
                    value: Number(edge.value ?? 0),
                    time: typeof edge.average_conversion_time === 'number' ? edge.average_conversion_time : null,
                };
            }),
        [response],
    );
    const persons = (edge: Edge) =>
        onPersons?.({
            title: `${split(edge.source).name} → ${split(edge.target).name}`,
            query: {
                kind: 'ActorsQuery',
                source: {
                    kind: 'InsightActorsQuery',
                    source: { ...query, pathsFilter: { ...record(query.pathsFilter), pathStartKey: edge.source, pathEndKey: edge.target } },
                },
            },
        });
    if (edges.length === 0)
        return (
            <ResultRoot query={query} kind="paths" compact={compact}>
                <p class="muted">No paths in this range.</p>
            </ResultRoot>
        );
    return (
        <ResultRoot query={query} kind="paths" compact={compact}>
            <PathsChart edges={edges} onEdge={onPersons ? persons : null} />
            {!compact && (
                <div class="table-scroll">
                    <table class="table kind-edges">
                        <thead>
                            <tr>
                                <th scope="col">Step</th>
                                <th scope="col">From</th>
                                <th scope="col">To</th>
                                <th scope="col" class="num">
                                    Persons
                                </th>
                                <th scope="col" class="num">
                                    Average time
                                </th>
                            </tr>
                        </thead>
                        <tbody>
                            {edges.map((edge, index) => (
                                <tr key={index} data-source={edge.source} data-target={edge.target}>
                                    <td>{split(edge.source).step}</td>
                                    <td class="kind-path-name">{split(edge.source).name}</td>
                                    <td class="kind-path-name">{split(edge.target).name}</td>
                                    <td class="num">
                                        {onPersons ? (
                                            <button type="button" class="link" onClick={() => persons(edge)}>
                                                <data value={String(edge.value)}>{formatCount(edge.value)}</data>
                                            </button>
                                        ) : (
                                            <data value={String(edge.value)}>{formatCount(edge.value)}</data>
                                        )}
                                    </td>
                                    <td class="num">{edge.time === null ? '–' : duration(edge.time / 1000)}</td>
                                </tr>
                            ))}
                        </tbody>
                    </table>
                </div>
            )}
        </ResultRoot>
    );
}

export const paths: InsightKind = {
    kind: 'PathsQuery',
    label: 'Paths',
    create: () => ({ kind: 'PathsQuery', pathsFilter: { includeEventTypes: ['$pageview'], stepLimit: 5 }, dateRange: { date_from: '-7d' } }),
    Editor: composing(Editor),
    Result,
};
