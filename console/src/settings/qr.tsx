// A QR code drawn as inline SVG (no image URL: the policy allows images of this origin only):
// `uqr` encodes the text into modules, each dark one a unit square of one path.

import { encode } from 'uqr';

export function QrCode({ text, label }: { text: string; label: string }) {
    const { data, size } = encode(text, { ecc: 'M', border: 4 });
    let path = '';
    data.forEach((row, y) =>
        row.forEach((dark, x) => {
            if (dark) path += `M${x} ${y}h1v1h-1z`;
        }),
    );
    return (
        <svg class="qr-code" viewBox={`0 0 ${size} ${size}`} role="img" aria-label={label} shape-rendering="crispEdges" xmlns="http://www.w3.org/2000/svg">
            <rect width={size} height={size} fill="#fff" />
            <path d={path} fill="#000" />
        </svg>
    );
}
