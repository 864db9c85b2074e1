/** The messages between the conversion pool and its workers (structured clone; PNG and WebP bytes transferred). */
import type { ConversionModules } from "./codecs.ts";
import type { WebpSettings } from "./settings.ts";

export type WorkerRequest =
  /** Without modules: the worker compiles them from its embedded files and sends them back. */
  | { id: number; kind: "init"; modules?: ConversionModules }
  | { id: number; kind: "warm_up"; settings: WebpSettings }
  | { id: number; kind: "convert"; png: Uint8Array; settings: WebpSettings };

export type WorkerReply =
  | { id: number; kind: "ready"; ms: number; compiled?: ConversionModules }
  | { id: number; kind: "warmed"; ms: number }
  | { id: number; kind: "converted"; webp: Uint8Array; ms: number }
  | { id: number; kind: "failed"; stage: "load" | "decode" | "encode"; message: string };
