/**
 * A client's last N releases on npm, from `npm view <package> time --json` (a map
 * of version → publish time, plus `created` / `modified`). Releases only: a version
 * with a pre-release tag (`-alpha.1`, `-nightly…`) is left out. Ordered by version,
 * not by date: a registry mirror may carry republished dates that put an old
 * version last.
 */
export type Release = { version: string; date: string };

const stableVersion = /^\d+\.\d+\.\d+$/;

/** The last `count` releases, and the versions in `also` (an older pin, say) wherever they are; in version order. */
export function lastReleases(
  times: Record<string, string>,
  count: number,
  also: readonly string[] = [],
): Release[] {
  const missing = also.filter((version) => times[version] === undefined);
  if (missing.length > 0) throw new Error(`not published on npm: ${missing.join(", ")}`);
  const all = Object.entries(times)
    .filter(([version]) => stableVersion.test(version))
    .map(([version, date]) => ({ version, date: date.slice(0, 10) }))
    .sort((a, b) => Bun.semver.order(a.version, b.version));
  const last = all.slice(-count);
  return all.filter((r) => last.includes(r) || also.includes(r.version));
}
