/**
 * End to end: `ura-sidecar export dataset` (the compiled binary) on real records —
 * the smoke episodes of all four pinned CLIs (one `validate --all` run) and a
 * 25-turn camera episode (Codex CLI against `serve`, the scripted model
 * observing 23 times) — read back by a validator written here from the
 * evidence the runs left, not from the export's own code:
 *   - every line's calls and results pair up, ids are unique, arguments are JSON
 *     that validates against the line's tool schema, no `_callID`;
 *   - the line's messages (images put back) are the last request the scripted
 *     upstream received in that conversation, byte for byte, so the system
 *     prompt and tools are as sent; the answer is what the model said;
 *   - every image file's bytes are a WebP the upstream received, named by its
 *     SHA-256, and decode to the pixels of a PNG the client sent;
 *   - no credential of any of these episodes, no control password, no upstream
 *     key anywhere in the dataset;
 *   - the manifest's counts and per-file SHA-256 match the files;
 * then a second export is byte-identical, and a torn line is reported by name
 * and leaves nothing of that episode in the dataset. The camera episode against the
 * instant scripted model, and against a slow, throttling one
 * (test/support/upstream-profiles-under-test.ts): a dataset line is its exchanges'
 * answered requests, never a failed attempt's.
 */
import { expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { appendFileSync, cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { AjvJsonSchemaValidator } from "@modelcontextprotocol/sdk/validation/ajv";
import { type Codecs, loadCodecs } from "../../src/images/codecs.ts";
import { runLaunch } from "../../src/kits/run-launch.ts";
import { longEpisodeReply } from "../../src/scripted-upstream/long-episode-reply.ts";
import { serveScriptedUpstream } from "../../src/scripted-upstream/serve-scripted-upstream.ts";
import { assertPrerequisites, runClient } from "../support/client-run.ts";
import { settledExchanges } from "../support/episode-evidence.ts";
import { describeInLoopbackNamespace } from "../support/loopback-namespace.ts";
import { binaryPath, controlPassword, startSidecarProcess } from "../support/sidecar-process.ts";
import {
  answeredWhole,
  expectOneAnswerPerExchange,
  forEachUpstreamProfile,
  upstreamProfilesUnderTest,
} from "../support/upstream-profiles-under-test.ts";
import { runValidate } from "../support/validate-run.ts";
import { varTmp } from "../support/var-tmp.ts";

const timeoutMs = 900_000;
const upstreamKey = "sk-test-upstream-secret-key";

type Json = Record<string, unknown>;
type Message = {
  role: string;
  content: unknown;
  tool_calls?: { id: string; type: string; function: { name: string; arguments: string } }[];
  tool_call_id?: string;
};
type Line = { messages: Message[]; tools?: { function: { name: string; parameters: unknown } }[] };
type ReceivedBody = { messages: Json[]; tools?: unknown[] };

function exportDataset(dataDir: string, out: string) {
  const cmd = [binaryPath, "export", "dataset", "--data-dir", dataDir, "--out", out, "--all"];
  const env = {
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    URA_CONTROL_PASSWORD: controlPassword,
    URA_UPSTREAM_API_KEY: upstreamKey,
  };
  return runLaunch({ cmd, cwd: process.cwd(), env }, timeoutMs);
}

function tree(dir: string, rel = ""): Record<string, string> {
  const out: Record<string, string> = {};
  for (const entry of readdirSync(join(dir, rel), { withFileTypes: true })) {
    const path = rel ? `${rel}/${entry.name}` : entry.name;
    if (entry.isDirectory()) Object.assign(out, tree(dir, path));
    else
      out[path] = createHash("sha256")
        .update(readFileSync(join(dir, path)))
        .digest("hex");
  }
  return out;
}

const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");
const pixels = (image: { width: number; height: number; data: Uint8Array | Uint8ClampedArray }) =>
  createHash("sha256").update(`${image.width}x${image.height}`).update(image.data).digest("hex");

/** A recorded body with each `{"$blob":"sha256:…",media_type}` reference replaced by the data URL it stands for. */
function withDataUrls(value: unknown, blobsDir: string): unknown {
  if (Array.isArray(value)) return value.map((item) => withDataUrls(item, blobsDir));
  if (value === null || typeof value !== "object") return value;
  const ref = value as { $blob?: unknown; media_type?: unknown };
  if (typeof ref.$blob === "string" && ref.$blob.startsWith("sha256:")) {
    const bytes = readFileSync(join(blobsDir, ref.$blob.slice("sha256:".length)));
    return `data:${String(ref.media_type)};base64,${bytes.toString("base64")}`;
  }
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, withDataUrls(v, blobsDir)]));
}

/** Every data-URL image in a received upstream body, as bytes. */
function dataUrlImages(value: unknown): Uint8Array[] {
  const text = JSON.stringify(value);
  return [...text.matchAll(/data:image\/[a-z]+;base64,([A-Za-z0-9+/=]+)/g)].map(
    (m) => new Uint8Array(Buffer.from(m[1] ?? "", "base64")),
  );
}

/** The line's image paths replaced by the data URLs of the files they name. */
function inlined(messages: Message[], dir: string): Json[] {
  return messages.map((m) =>
    Array.isArray(m.content)
      ? {
          ...m,
          content: m.content.map((part: { type: string; image_url?: { url: string } }) =>
            part.type === "image_url" && part.image_url
              ? {
                  ...part,
                  image_url: {
                    ...part.image_url,
                    url: `data:image/webp;base64,${readFileSync(join(dir, part.image_url.url)).toString("base64")}`,
                  },
                }
              : part,
          ),
        }
      : (m as unknown as Json),
  );
}

/** The independent read-back: structure, schemas, private fields of one line. */
function expectWellFormed(line: Line): void {
  const validator = new AjvJsonSchemaValidator();
  const schemas = new Map(
    (line.tools ?? []).map((t) => [t.function.name, validator.getValidator(t.function.parameters as never)]),
  );
  const ids = new Set<string>();
  const open = new Set<string>();
  const last = line.messages.length - 1;
  expect(line.messages[last]?.role).toBe("assistant");
  line.messages.forEach((m, i) => {
    expect(["system", "user", "assistant", "tool"]).toContain(m.role);
    for (const call of m.tool_calls ?? []) {
      expect(ids.has(call.id)).toBe(false);
      ids.add(call.id);
      if (i !== last) open.add(call.id);
      expect(call.type).toBe("function");
      const args = JSON.parse(call.function.arguments) as Json;
      expect(Object.keys(args)).not.toContain("_callID");
      const check = schemas.get(call.function.name);
      expect(check).toBeDefined();
      expect(check?.(args).valid).toBe(true);
    }
    if (m.role === "tool") {
      expect(open.has(m.tool_call_id ?? "")).toBe(true);
      open.delete(m.tool_call_id ?? "");
    }
  });
  expect([...open]).toEqual([]);
  expect(JSON.stringify(line.tools ?? [])).not.toContain("_callID");
}

describeInLoopbackNamespace(
  "dataset export end to end",
  { file: import.meta.path, timeoutMs: timeoutMs * upstreamProfilesUnderTest.length },
  () =>
    forEachUpstreamProfile((profile) =>
      test(
        `four clients' smoke episodes and a 25-turn camera episode → a dataset that reads back valid, byte-identical on re-export${profile.label}`,
        async () => {
          const codecs: Codecs = await loadCodecs();
          assertPrerequisites("codex");

          // 1. The smoke episode of every pinned client, as `validate` runs it on its embedded
          // model (against a slow upstream in validate-upstream.e2e.test.ts).
          const validated = await runValidate(["--all"]);
          if (validated.code !== 0) console.error(`${validated.stdout}\n${validated.stderr}`);
          expect(validated.code).toBe(0);
          const clients = validated.summary?.clients.map((c) => c.client) ?? [];
          expect(clients.sort()).toEqual(["claude", "codex", "gemini", "opencode"]);
          const received: Record<string, ReceivedBody[]> = {};
          const secrets = [controlPassword, upstreamKey];
          for (const client of clients) {
            // validate's evidence quotes the records, where images are blob references: put back the data URLs sent.
            const { records_dir } = JSON.parse(
              readFileSync(join(validated.out, client, "episode-status.json"), "utf8"),
            ) as { records_dir: string };
            received[client] = (
              JSON.parse(readFileSync(join(validated.out, client, "upstream-requests.json"), "utf8")) as {
                body: ReceivedBody;
              }[]
            ).map(
              (r) => withDataUrls(r.body, join(records_dir, "..", "..", "blobs", "sha256")) as ReceivedBody,
            );
            const credentials = readFileSync(join(validated.out, client, "kit", "credentials.env"), "utf8");
            secrets.push(...[...credentials.matchAll(/ura_(?:key|mcp)_[A-Za-z0-9_-]+/g)].map((m) => m[0]));
          }

          // 2. The long camera episode: Codex CLI, 23 observations, finish, final text = 25 turns.
          // (Codex, because it starts its MCP servers before the first model request; Claude Code
          // may send the first one before its MCP tools are listed, and then the model has no robot.)
          const upstream = await serveScriptedUpstream(0, {
            decide: longEpisodeReply(23),
            profile: profile.profile,
          });
          const sidecar = await startSidecarProcess({ upstreamUrl: upstream.url });
          let longId = "";
          try {
            const episode = await sidecar.createEpisode({ client: "codex" });
            longId = episode.id;
            secrets.push(episode.ingress_key, episode.mcp_token);
            const run = await runClient("codex", sidecar, episode, { timeoutMs: timeoutMs / 3 });
            const status = await sidecar.episode(episode.id);
            if (run.code !== 0 || status.state !== "finished")
              console.error(
                `${run.context}\nepisode: ${JSON.stringify(status)}\nupstream requests: ${upstream.scripted.received.length}`,
              );
            expect(run.code).toBe(0);
            expect(status.state).toBe("finished");
            const evidence = expectOneAnswerPerExchange(
              upstream.scripted.received,
              await settledExchanges(episode.records_dir),
            );
            console.log(`camera episode upstream${profile.label}: ${JSON.stringify(evidence)}`);
            // One answered request per turn; a failed attempt's is none of the dataset's lines.
            received.long = upstream.scripted.received
              .filter(answeredWhole)
              .map((r) => r.body as ReceivedBody);
          } finally {
            await sidecar.stopCleanly();
            upstream.stop();
          }
          expect(received.long?.length).toBe(25);

          // One data directory holding all five episodes (records of earlier runs, read afterwards).
          const work = mkdtempSync(join(varTmp(), "dataset-"));
          const dataDir = join(work, "data");
          cpSync(join(validated.out, "data"), dataDir, { recursive: true });
          cpSync(join(sidecar.dataDir, "episodes"), join(dataDir, "episodes"), { recursive: true });
          if (existsSync(join(sidecar.dataDir, "blobs")))
            cpSync(join(sidecar.dataDir, "blobs"), join(dataDir, "blobs"), { recursive: true });

          // 3. Export, and read it back.
          const out = join(work, "dataset");
          const first = await exportDataset(dataDir, out);
          if (first.code !== 0) console.error(`${first.stdout}\n${first.stderr}`);
          expect(first.code).toBe(0);
          const lines = readFileSync(join(out, "dataset.jsonl"), "utf8")
            .trimEnd()
            .split("\n")
            .map((l) => JSON.parse(l) as Line);
          const manifest = JSON.parse(readFileSync(join(out, "manifest.json"), "utf8"));
          type EpisodeEntry = {
            id: string;
            client: string;
            conversations: { line: number; exchanges: string[] }[];
          };
          const episodes = manifest.episodes as EpisodeEntry[];
          expect(episodes.map((e) => e.client).sort()).toEqual([
            "claude",
            "codex",
            "codex",
            "gemini",
            "opencode",
          ]);
          // OpenCode's title request is a conversation of its own; every other episode is one line.
          expect(lines).toHaveLength(6);
          expect(manifest.validation.passed).toBe(true);
          expect(manifest.skipped).toEqual([]);

          const allText =
            readFileSync(join(out, "dataset.jsonl"), "utf8") +
            readFileSync(join(out, "manifest.json"), "utf8");
          for (const secret of secrets) expect(allText.includes(secret)).toBe(false);
          expect(allText).not.toMatch(/ura_(?:key|mcp)_[A-Za-z0-9_-]{20,}/);

          const receivedImages = new Set(
            Object.values(received).flatMap((bodies) => bodies.flatMap((b) => dataUrlImages(b).map(sha256))),
          );
          const clientPngPixels = new Set<string>();
          for (const id of readdirSync(join(dataDir, "episodes"))) {
            const records = readFileSync(join(dataDir, "episodes", id, "exchanges.jsonl"), "utf8");
            for (const m of records.matchAll(/iVBORw0KGgo[A-Za-z0-9+/=]+/g))
              clientPngPixels.add(pixels(codecs.decodePng(new Uint8Array(Buffer.from(m[0], "base64")))));
          }
          // Records refer to images by blob: the clients' PNGs are the store's PNG blobs.
          const blobsDir = join(dataDir, "blobs", "sha256");
          for (const name of existsSync(blobsDir) ? readdirSync(blobsDir) : []) {
            const bytes = new Uint8Array(readFileSync(join(blobsDir, name)));
            if (Buffer.from(bytes.subarray(0, 4)).toString("latin1") === "\x89PNG")
              clientPngPixels.add(pixels(codecs.decodePng(bytes)));
          }
          for (const episode of episodes) {
            const bodies = episode.id === longId ? (received.long ?? []) : (received[episode.client] ?? []);
            for (const conversation of episode.conversations) {
              const line = lines[conversation.line - 1];
              if (!line) throw new Error(`manifest names line ${conversation.line}, which is not there`);
              expectWellFormed(line);
              // The line is a request the upstream really received, plus the model's answer.
              const request = inlined(line.messages.slice(0, -1), out);
              const sent = bodies.find((b) => JSON.stringify(b.messages) === JSON.stringify(request));
              expect(sent).toBeDefined();
              expect(JSON.stringify(line.tools)).toBe(JSON.stringify(sent?.tools));
              if (line.tools) expect(line.messages.at(-1)?.content).toContain("The episode is complete");
            }
          }
          const longLine = lines[(episodes.find((e) => e.id === longId)?.conversations[0]?.line ?? 0) - 1];
          expect(longLine?.messages.filter((m) => m.role === "assistant")).toHaveLength(25);
          expect(
            longLine?.messages.filter((m) => JSON.stringify(m.content).includes('"image_url"')),
          ).toHaveLength(23);

          const files = tree(out);
          const images = Object.keys(files).filter((f) => f.startsWith("images/"));
          expect(images.length).toBeGreaterThan(0);
          expect(manifest.counts.images).toBe(images.length);
          for (const file of images) {
            const bytes = new Uint8Array(readFileSync(join(out, file)));
            expect(file).toBe(`images/sha256-${sha256(bytes)}.webp`);
            expect(receivedImages.has(sha256(bytes))).toBe(true);
            expect(clientPngPixels.has(pixels(codecs.decodeWebp(bytes)))).toBe(true);
          }
          for (const [name, digest] of Object.entries(files))
            if (name !== "manifest.json") expect(manifest.files[name]?.sha256).toBe(digest);

          // 4. The same records export to the same bytes.
          const again = join(work, "dataset-again");
          expect((await exportDataset(dataDir, again)).code).toBe(0);
          expect(tree(again)).toEqual(files);

          // 5. A torn line: that episode is reported by name, nothing of it is exported.
          const damaged = join(work, "damaged");
          cpSync(dataDir, damaged, { recursive: true });
          const torn = episodes.find((e) => e.client === "gemini")?.id ?? "";
          appendFileSync(
            join(damaged, "episodes", torn, "exchanges.jsonl"),
            '{"at":"2026-12-01T10:00:00.000Z","exchange":"ex_9999","stage":"client_req',
          );
          const damagedOut = join(work, "dataset-damaged");
          const broken = await exportDataset(damaged, damagedOut);
          expect(broken.code).toBe(1);
          expect(broken.stdout).toContain(`skipped ${torn} [corrupt]: exchanges.jsonl ends in a torn line`);
          const brokenManifest = JSON.parse(readFileSync(join(damagedOut, "manifest.json"), "utf8"));
          expect(brokenManifest.episodes.map((e: { id: string }) => e.id)).not.toContain(torn);
          expect(readFileSync(join(damagedOut, "dataset.jsonl"), "utf8").trimEnd().split("\n")).toHaveLength(
            5,
          );
          rmSync(work, { recursive: true, force: true });
        },
        timeoutMs,
      ),
    ),
);
