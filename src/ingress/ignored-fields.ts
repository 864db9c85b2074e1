/**
 * What a request carried that the sidecar accepted but does not forward, one
 * readable note per kind, in the order first seen (the records show it with the
 * upstream request). Locations of a repeated kind (`cache_control` on many
 * blocks) are gathered into that kind's one note.
 */
export type IgnoredFields = {
  add(note: string): void;
  /** A note `<what> at <path>, <path>…`, listing every path where `what` was seen. */
  addAt(what: string, path: string): void;
  list(): string[];
};

export function createIgnoredFields(): IgnoredFields {
  const notes: (string | { what: string; paths: string[] })[] = [];
  const seen = new Set<string>();
  const grouped = new Map<string, string[]>();
  return {
    add(note) {
      if (seen.has(note)) return;
      seen.add(note);
      notes.push(note);
    },
    addAt(what, path) {
      const paths = grouped.get(what);
      if (paths) paths.push(path);
      else {
        const group = { what, paths: [path] };
        grouped.set(what, group.paths);
        notes.push(group);
      }
    },
    list: () => notes.map((n) => (typeof n === "string" ? n : `${n.what} at ${n.paths.join(", ")}`)),
  };
}
