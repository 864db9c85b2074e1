/**
 * The fixed palette of the inert executor's observations. The scripted upstream
 * reads the same table to name the colour it sees, so a smoke episode can check
 * that the image really reached the model.
 */
export const inertPalette = {
  red: [220, 40, 40],
  green: [40, 180, 60],
  blue: [40, 80, 220],
  yellow: [235, 210, 40],
  purple: [150, 60, 190],
  orange: [240, 140, 30],
} as const satisfies Record<string, readonly [number, number, number]>;

export type PaletteColour = keyof typeof inertPalette;

export const paletteColours = Object.keys(inertPalette) as PaletteColour[];

/** The palette colour nearest to an RGB pixel. */
export function nearestPaletteColour(rgb: readonly [number, number, number]): PaletteColour {
  let best: PaletteColour = "red";
  let bestDistance = Number.POSITIVE_INFINITY;
  for (const name of paletteColours) {
    const [r, g, b] = inertPalette[name];
    const d = (r - rgb[0]) ** 2 + (g - rgb[1]) ** 2 + (b - rgb[2]) ** 2;
    if (d < bestDistance) {
      bestDistance = d;
      best = name;
    }
  }
  return best;
}
