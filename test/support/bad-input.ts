/**
 * Generators of bad client requests for the bad-input fuzz (tests only): edits
 * of a recorded request's JSON tree (drop, replace, wrong type, unknown field,
 * huge string, deep nesting), broken images in the places each protocol carries
 * them (invalid base64, non-PNG bytes labelled PNG, truncated or lying PNGs), and
 * broken transport (truncated JSON, wrong content types). Pure: every edit works
 * on a copy and says what it did, so a failure report can be replayed.
 */
import fc from "fast-check";

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type Path = (string | number)[];

/** Where deep nesting goes: the serialised body has this string replaced by the nested text. */
export const deepMarker = "__URA_FUZZ_DEEP__";

export type Edit =
  | { op: "drop"; at: number }
  | { op: "replace"; at: number; value: Json }
  | { op: "wrong_type"; at: number }
  | { op: "unknown_field"; at: number; key: string; value: Json }
  | { op: "huge_string"; at: number; bytes: number }
  | { op: "deep_nesting"; at: number; depth: number; bracket: "[" | "{" };

export type Transport = {
  contentType: string | null;
  /** Cut the serialised body to this fraction of its length (1 = whole). */
  cut: number;
};

/** Every path in a JSON tree, parents before children. */
export function allPaths(value: Json, prefix: Path = [], out: Path[] = []): Path[] {
  if (Array.isArray(value)) {
    value.forEach((v, i) => {
      out.push([...prefix, i]);
      allPaths(v, [...prefix, i], out);
    });
  } else if (value !== null && typeof value === "object") {
    for (const [k, v] of Object.entries(value)) {
      out.push([...prefix, k]);
      allPaths(v, [...prefix, k], out);
    }
  }
  return out;
}

/** Indexes (into `allPaths`) of the string values of a JSON tree, optionally only under keys matching `key`. */
export function stringValueIndexes(value: Json, key?: RegExp): number[] {
  return allPaths(value).flatMap((path, i) =>
    typeof getAt(value, path) === "string" && (key === undefined || key.test(String(path[path.length - 1])))
      ? [i]
      : [],
  );
}

function getAt(root: Json, path: Path): Json | undefined {
  let node: Json | undefined = root;
  for (const key of path) {
    if (node === null || typeof node !== "object") return undefined;
    node = Array.isArray(node) ? node[key as number] : (node as Record<string, Json>)[key as string];
  }
  return node;
}

function setAt(root: Json, path: Path, value: Json | undefined): void {
  const parent = getAt(root, path.slice(0, -1));
  const key = path[path.length - 1];
  if (parent === null || typeof parent !== "object" || key === undefined) return;
  if (Array.isArray(parent)) {
    if (value === undefined) parent.splice(key as number, 1);
    else parent[key as number] = value;
  } else if (value === undefined) delete parent[key as string];
  else parent[key as string] = value;
}

/** A value of a different JSON type than the given one. */
export function otherType(value: Json | undefined): Json {
  if (typeof value === "string") return 12345;
  if (typeof value === "number") return "12345";
  if (typeof value === "boolean") return "true";
  if (value === null) return { null: true };
  if (Array.isArray(value)) return { "0": value[0] ?? null };
  return [value ?? null];
}

/** Applies edits to a copy; returns the copy and a readable line per edit. */
export function applyEdits(seed: Json, edits: Edit[]): { value: Json; described: string[] } {
  const value = structuredClone(seed);
  const described: string[] = [];
  for (const edit of edits) {
    const paths = allPaths(value);
    const path = paths.length === 0 ? [] : (paths[edit.at % paths.length] as Path);
    const where = path.length === 0 ? "(root)" : path.join(".");
    switch (edit.op) {
      case "drop":
        setAt(value, path, undefined);
        described.push(`drop ${where}`);
        break;
      case "replace":
        // A copy: fast-check hands out the same constant objects ({} and []) to many edits
        // and runs, so inserting one and editing it later would build a cycle.
        setAt(value, path, structuredClone(edit.value));
        described.push(`replace ${where} with ${JSON.stringify(edit.value).slice(0, 60)}`);
        break;
      case "wrong_type":
        setAt(value, path, otherType(getAt(value, path)));
        described.push(`wrong type at ${where}`);
        break;
      case "unknown_field": {
        const objects = [[], ...paths].filter((p) => {
          const node = getAt(value, p);
          return node !== null && typeof node === "object" && !Array.isArray(node);
        });
        const target = objects[edit.at % objects.length] ?? [];
        const node = getAt(value, target) as Record<string, Json>;
        // defineProperty: a key like "__proto__" must become an own, serialised field.
        Object.defineProperty(node, edit.key, {
          value: structuredClone(edit.value),
          enumerable: true,
          writable: true,
          configurable: true,
        });
        described.push(`unknown field ${[...target, edit.key].join(".")}`);
        break;
      }
      case "huge_string":
        setAt(value, path, "x".repeat(edit.bytes));
        described.push(`huge string (${edit.bytes} bytes) at ${where}`);
        break;
      case "deep_nesting":
        setAt(value, path, `${deepMarker}${edit.bracket}${edit.depth}`);
        described.push(`nesting ${edit.depth} deep (${edit.bracket}) at ${where}`);
        break;
      default: {
        const never: never = edit;
        throw new Error(`unknown edit ${JSON.stringify(never)}`);
      }
    }
  }
  return { value, described };
}

/** Serialises a request, expanding deep-nesting markers into nested text. */
export function serialise(value: Json): string {
  return JSON.stringify(value).replace(
    new RegExp(`"${deepMarker}([\\[{])(\\d+)"`, "g"),
    (_m, bracket: string, depth: string) => {
      const n = Number(depth);
      return bracket === "[" ? `${"[".repeat(n)}${"]".repeat(n)}` : `${'{"a":'.repeat(n)}1${"}".repeat(n)}`;
    },
  );
}

const oddStrings = [
  "",
  " ",
  "\u0000",
  "\ud800",
  "null",
  "{}",
  "data:image/png;base64,",
  "../../etc/passwd",
  "🤖".repeat(50),
];

export const oddValueArbitrary: fc.Arbitrary<Json> = fc.oneof(
  fc.constantFrom<Json>(null, true, false, 0, -1, 1e308, 2 ** 53 + 2, 0.5, [], {}),
  fc.constantFrom<Json>(...oddStrings),
  fc.string({ maxLength: 40 }),
  fc.jsonValue({ maxDepth: 3 }) as fc.Arbitrary<Json>,
);

const index = fc.nat({ max: 1_000_000 });

export const editArbitrary: fc.Arbitrary<Edit> = fc.oneof(
  fc.record({ op: fc.constant("drop" as const), at: index }),
  fc.record({ op: fc.constant("replace" as const), at: index, value: oddValueArbitrary }),
  fc.record({ op: fc.constant("wrong_type" as const), at: index }),
  fc.record({
    op: fc.constant("unknown_field" as const),
    at: index,
    key: fc.oneof(
      fc.constantFrom("foo", "__proto__", "constructor", "toString", "stream_options", "x-unknown"),
      fc.string({ minLength: 1, maxLength: 12 }),
    ),
    value: oddValueArbitrary,
  }),
  fc.record({
    op: fc.constant("huge_string" as const),
    at: index,
    bytes: fc.constantFrom(100_000, 1_000_000, 3_000_000),
  }),
  fc.record({
    op: fc.constant("deep_nesting" as const),
    at: index,
    // Deeper than ~10 000 levels crashes the records today (see the known-bug test in bad-input.test.ts).
    depth: fc.constantFrom(100, 1_000, 5_000),
    bracket: fc.constantFrom("[" as const, "{" as const),
  }),
);

export const transportArbitrary: fc.Arbitrary<Transport> = fc.record({
  contentType: fc.constantFrom(
    "application/json",
    "application/json",
    "text/plain",
    "application/x-www-form-urlencoded",
    "multipart/form-data; boundary=x",
    null,
  ),
  cut: fc.oneof(fc.constant(1), fc.constant(1), fc.double({ min: 0, max: 0.999, noNaN: true })),
});

// ---- images ----------------------------------------------------------------

/** A 4×4 red PNG (the fixtures' image). */
export const redPngBase64 =
  "iVBORw0KGgoAAAANSUhEUgAAAAQAAAAECAYAAACp8Z5+AAAAEklEQVR4nGO4IyLyHxkzkC4AAEOYIDFDFAUYAAAAAElFTkSuQmCC";

function crc32(bytes: Uint8Array): number {
  let c = 0xffffffff;
  for (const b of bytes) {
    c ^= b;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  }
  return (c ^ 0xffffffff) >>> 0;
}

/** The red PNG with its IHDR claiming another size (CRC fixed, pixel data unchanged). */
export function lyingPngBase64(width: number, height: number): string {
  const bytes = new Uint8Array(Buffer.from(redPngBase64, "base64"));
  const view = new DataView(bytes.buffer);
  view.setUint32(16, width);
  view.setUint32(20, height);
  view.setUint32(29, crc32(bytes.subarray(12, 29)));
  return Buffer.from(bytes).toString("base64");
}

export type BadImage = { name: string; data: string; mediaType: string };

export const badImages: BadImage[] = [
  { name: "invalid base64", data: "***not base64***", mediaType: "image/png" },
  { name: "base64 with a bad tail", data: `${redPngBase64.slice(0, -4)}@@==`, mediaType: "image/png" },
  { name: "empty data", data: "", mediaType: "image/png" },
  {
    name: "JPEG bytes labelled PNG",
    data: Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0, 16, 74, 70, 73, 70, 0, 1]).toString("base64"),
    mediaType: "image/png",
  },
  {
    name: "text labelled PNG",
    data: Buffer.from("hello, not an image").toString("base64"),
    mediaType: "image/png",
  },
  {
    name: "truncated PNG",
    data: Buffer.from(redPngBase64, "base64").subarray(0, 40).toString("base64"),
    mediaType: "image/png",
  },
  { name: "PNG claiming 65535×65535", data: lyingPngBase64(65535, 65535), mediaType: "image/png" },
  { name: "PNG claiming 1×1", data: lyingPngBase64(1, 1), mediaType: "image/png" },
  { name: "PNG labelled image/svg+xml", data: redPngBase64, mediaType: "image/svg+xml" },
  { name: "PNG labelled text/plain", data: redPngBase64, mediaType: "text/plain" },
];

/**
 * Puts a bad image into every image slot of a request: data URLs
 * (`data:image/…;base64,…`), and `{data, mimeType}` (Gemini) or
 * `{data, media_type}` (Anthropic) objects. Returns how many slots it changed.
 */
export function replaceImages(root: Json, image: BadImage): number {
  let changed = 0;
  const visit = (node: Json, parent: Json[] | Record<string, Json> | null, key: string | number | null) => {
    if (typeof node === "string" && node.startsWith("data:image/") && parent !== null && key !== null) {
      (parent as Record<string | number, Json>)[key] = `data:${image.mediaType};base64,${image.data}`;
      changed += 1;
      return;
    }
    if (Array.isArray(node)) {
      node.forEach((v, i) => {
        visit(v, node, i);
      });
      return;
    }
    if (node === null || typeof node !== "object") return;
    if (
      typeof node.data === "string" &&
      (typeof node.mimeType === "string" || typeof node.media_type === "string")
    ) {
      node.data = image.data;
      if (typeof node.mimeType === "string") node.mimeType = image.mediaType;
      else node.media_type = image.mediaType;
      changed += 1;
      return;
    }
    for (const [k, v] of Object.entries(node)) visit(v, node, k);
  };
  visit(root, null, null);
  return changed;
}
