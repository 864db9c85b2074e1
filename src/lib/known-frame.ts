/**
 * A stand-in for a long string of a request (a camera frame's base64, or its data URL)
 * whose text is known well enough that it need not become a JavaScript string at all.
 *
 * A camera history resends every frame on every turn: at turn 200 that is ~147 MiB of
 * base64 held as strings while the request is processed, although every stage only asks
 * what it derived from the same text before (known-texts.ts). When the body splitter
 * meets a long string whose SHA-256 has facts complete enough (it is an image literal
 * whose blob reference is known and whose blob is on disk now), it keeps this object in
 * its place instead of decoding the bytes into a string. The stages ask it for facts by
 * kind (`knownFact`), as they ask a request's hold about a string.
 *
 * Verified equal, never assumed: the identity is the SHA-256 of the bytes that arrived,
 * and the blob holds the very bytes the text is the canonical base64 of (blob references
 * are written only for canonical base64, and the blob store checks a blob's digest when
 * it reads it). A stage that needs the text itself asks for it (`text()`): it is rebuilt
 * from the blob, its SHA-256 checked against the identity, and counted
 * (`materialised`), so a path that would cost the memory this saves shows in the
 * counts. Anything that turns the stand-in into text implicitly (a template literal,
 * `String()`, JSON.stringify) gets that same verified text, never a wrong one.
 */
import { z } from "zod";
import { SidecarError } from "./errors.ts";
import type { TextFacts } from "./known-texts.ts";
import { sha256Hex } from "./sha256.ts";

/**
 * What the blob reference to an image literal needs (src/records/image-references.ts), kept
 * as the text's fact `image_blob` (never a piece of the text): its data URL's media type or
 * sniffed type, decoded length, the blob's digest, whether it is a data URL, where its base64 starts.
 */
export type ImageBlob = {
  mediaType: string;
  bytes: number;
  digest: string;
  dataUrl: boolean;
  base64From: number;
};

/** The kind of a long string's fact that is its blob reference (an `ImageBlob`, or undefined: not an image literal). */
export const imageBlobFact = "image_blob";

/** What a frame's text is rebuilt from: the blob store's checked read. */
export interface FrameBlobs {
  /** Whether the blob is a file on disk now (not merely remembered as written). */
  onDisk(digest: string): boolean;
  /** The blob's bytes, checked against their digest; throws when missing or damaged. */
  read(digest: string): Uint8Array;
  /** Moves a blob that cannot be read back out of the way, so the next request carrying its bytes writes it again. */
  setAside(digest: string): void;
}

/**
 * How a frame's text is made of its blob: a data URL's head (`data:<type>;base64,`) and the
 * base64 of its bytes; `prefix`: the text's first characters, kept for what reads only a
 * header (an image's size), decoded from the bytes that arrived.
 */
export type FrameSource = { blob: string; head: string; prefix: string };

/** How many of a frame's first characters its stand-in keeps (an image header is in the first 40 of its base64). */
export const framePrefixChars = 128;

/** Counts kept by the process's store of facts. */
export interface FrameCounts {
  /** A fact answered from what was known. */
  reused(): void;
  /** A frame's text rebuilt from its blob. */
  materialised(): void;
}

export class KnownFrame {
  readonly #source: FrameSource;
  readonly #blobs: FrameBlobs;
  readonly #counts: FrameCounts | undefined;
  readonly #payloadFacts: TextFacts | undefined;

  constructor(
    /** The facts of the text, found by the SHA-256 of its bytes (`facts.digest`). */
    readonly facts: TextFacts,
    /** The text's length in characters (its bytes: base64 and a data URL's head are ASCII). */
    readonly length: number,
    source: FrameSource,
    blobs: FrameBlobs,
    counts?: FrameCounts,
    /** For a data URL: the facts of its base64 after the comma, as a text of its own. */
    payloadFacts?: TextFacts,
  ) {
    this.#source = source;
    this.#blobs = blobs;
    this.#counts = counts;
    this.#payloadFacts = payloadFacts;
  }

  /** A fact of the text, computed from the text (rebuilt, counted) only when it is not known yet. */
  fact<T>(kind: string, compute: (text: string) => T): T {
    if (this.facts.values.has(kind)) {
      this.#counts?.reused();
      return this.facts.values.get(kind) as T;
    }
    const value = compute(this.text());
    this.facts.values.set(kind, value);
    return value;
  }

  /**
   * A fact of the bytes the text's base64 decodes to (not of a data URL's whole text), computed
   * from the blob's bytes, not from a rebuilt text, when it is not known yet.
   */
  factOfBytes<T>(kind: string, compute: (bytes: Uint8Array) => T): T {
    if (this.facts.values.has(kind)) {
      this.#counts?.reused();
      return this.facts.values.get(kind) as T;
    }
    if (this.isDataUrl) throw new Error("a data URL's facts of its bytes are its payload()'s");
    const value = compute(this.bytes());
    this.facts.values.set(kind, value);
    return value;
  }

  /** Whether the text is a data URL's, whose base64 after the comma is `payload()`. */
  get isDataUrl(): boolean {
    return this.#source.head !== "";
  }

  /** The data URL's base64 after its comma as a stand-in of its own (this frame when it is plain base64). */
  payload(): KnownFrame {
    if (this.#payloadFacts === undefined) return this;
    const head = this.#source.head.length;
    return new KnownFrame(
      this.#payloadFacts,
      this.length - head,
      { blob: this.#source.blob, head: "", prefix: this.#source.prefix.slice(head) },
      this.#blobs,
      this.#counts,
    );
  }

  /** The text's first `n` characters (without rebuilding it when they are kept). */
  prefix(n: number): string {
    return n <= this.#source.prefix.length || this.#source.prefix.length === this.length
      ? this.#source.prefix.slice(0, n)
      : this.text().slice(0, n);
  }

  /**
   * The bytes the base64 decodes to: the blob's, checked against their digest. The bytes that
   * arrived were dropped, so a blob that cannot be read back fails this exchange as retryable,
   * and the same request sent again finds no blob and keeps its frame as text (writing the blob
   * again): one removed since the splitter found it on disk (retention, an operator), or one
   * still there that does not read back as its digest (damaged), which is set aside first.
   */
  bytes(): Uint8Array {
    const digest = this.#source.blob;
    try {
      return this.#blobs.read(digest);
    } catch (error) {
      const damaged = this.#blobs.onDisk(digest);
      if (damaged) this.#blobs.setAside(digest);
      const what = damaged
        ? "could not be read back from the sidecar's blob store (damaged: set aside)"
        : "was removed from the sidecar's blob store while the request was processed";
      throw new SidecarError(
        "unavailable",
        `an image of this request (sha256:${digest}) ${what}; nothing was delivered, send the request again`,
        { cause: error },
      );
    }
  }

  /** The text itself, rebuilt from the blob and checked against the identity (costly: counted). */
  text(): string {
    this.#counts?.materialised();
    const text = this.#source.head + Buffer.from(this.bytes()).toString("base64");
    // A data URL's base64 (a derived text, `<digest>#<offset>`) is the base64 of the checked
    // bytes; a whole text is checked against the SHA-256 it arrived with.
    const derived = this.facts.digest.includes("#");
    if (text.length !== this.length || (!derived && sha256Hex(text) !== this.facts.digest))
      throw new Error(
        `a known frame's text rebuilt from blob sha256:${this.#source.blob} is not the one received`,
      );
    return text;
  }

  toString(): string {
    return this.text();
  }

  toJSON(): string {
    return this.text();
  }
}

/** A long string's value: its text, or the stand-in of a known frame. */
export type FrameText = string | KnownFrame;

/** The text of a value, rebuilt from its blob when it is a stand-in (costly, counted: only where the text is needed). */
export function textOf(value: FrameText): string {
  return typeof value === "string" ? value : value.text();
}

function received(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  return typeof value;
}

/**
 * A client's string field that may carry a long base64 value: a string, or the stand-in the
 * body splitter kept in its place. Refuses anything else with zod's own words for a string field.
 */
export const frameTextSchema = z.custom<FrameText>(
  (value) => typeof value === "string" || value instanceof KnownFrame,
  { error: (issue) => `Invalid input: expected string, received ${received(issue.input)}` },
);
