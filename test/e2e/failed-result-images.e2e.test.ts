/**
 * The image of a failed tool result reaches the model, with every pinned client.
 * The scripted model miscopies the nonce, so the robot (inert executor) refuses
 * both `record` calls and returns the frame that explains why. Each client then
 * sends the failure back its own way — Codex keeps the image, Gemini CLI writes
 * it as base64 into an error string (lifted back into an image by the ingress),
 * Claude Code and OpenCode drop images of `isError` results (so the sidecar
 * answers them as a plain result headed by an unmistakable failure line). In
 * every case the next upstream request carries, under each refused call, the
 * failure text, and right after the batch that frame as lossless WebP with the
 * observed pixels, labelled with the call id. Judged from the sidecar's records.
 * Against the instant scripted model one client at a time, and against a slow,
 * throttling one (test/support/upstream-profiles-under-test.ts) the four at once: the
 * same holds, with every retried attempt recorded and one answer per exchange.
 */
import { beforeAll, expect, test } from "bun:test";
import { type ClientName, clientNames } from "../../src/clients/client-manifests.ts";
import { installClients } from "../../src/clients/install-clients.ts";
import { inertPalette, type PaletteColour } from "../../src/executor/inert-palette.ts";
import { loadCodecs } from "../../src/images/codecs.ts";
import { imagesSent, isLosslessWebp, readUpstreamExchanges } from "../../src/validate/upstream-evidence.ts";
import { runClient, withServedSidecar } from "../support/client-run.ts";
import { records, settledExchanges } from "../support/episode-evidence.ts";
import { describeInLoopbackNamespace } from "../support/loopback-namespace.ts";
import {
  expectOneAnswerPerExchange,
  forEachUpstreamProfile,
  type UpstreamProfileUnderTest,
} from "../support/upstream-profiles-under-test.ts";

const timeoutMs = 240_000;
const codecs = await loadCodecs();

type ChatMessage = { role: string; tool_call_id?: string; content: unknown };
type Call = { id: string; tool: string };

function textOf(content: unknown): string {
  if (typeof content === "string") return content;
  return (content as { type: string; text?: string }[])
    .map((p) => (p.type === "text" ? (p.text ?? "") : ""))
    .join("\n");
}

async function failedRecordImagesReachUpstream(
  client: ClientName,
  profile: UpstreamProfileUnderTest,
): Promise<void> {
  await withServedSidecar(
    client,
    async ({ sidecar, upstream: scripted }) => {
      const episode = await sidecar.createEpisode({ client });
      const run = await runClient(client, sidecar, episode, { timeoutMs });
      try {
        const evidence = expectOneAnswerPerExchange(
          scripted.scripted.received,
          await settledExchanges(episode.records_dir),
        );
        console.log(`${client}${profile.label}: ${JSON.stringify(evidence)}`);
        const ledger = records(episode.records_dir, "ledger");
        const calls = ledger.flatMap((e) => (e.type === "registered" ? (e.calls as Call[]) : []));
        const receipt = (id: string) =>
          ledger.find((e) => e.type === "receipt" && e.callId === id)?.result as {
            ok: boolean;
            data: { colour?: PaletteColour };
          };
        const observe = calls.find((c) => c.tool === "observe") as Call;
        const colour = receipt(observe.id).data.colour as PaletteColour;
        const recordIds = calls.filter((c) => c.tool === "record").map((c) => c.id);
        expect(recordIds).toHaveLength(2);
        for (const id of recordIds) expect(receipt(id).ok).toBe(false);

        // The first upstream request that answers the refused records.
        const upstream = readUpstreamExchanges(episode.records_dir);
        const next = upstream.find((r) =>
          (r.body as { messages: ChatMessage[] }).messages.some((m) => m.tool_call_id === recordIds[0]),
        );
        if (!next) throw new Error(`no upstream request answers the refused record ${recordIds[0]}`);
        const messages = (next.body as { messages: ChatMessage[] }).messages;
        for (const id of recordIds) {
          const at = messages.findIndex((m) => m.role === "tool" && m.tool_call_id === id);
          expect(at).toBeGreaterThan(0);
          const failure = textOf(messages[at]?.content);
          expect(failure).toContain("record refused");
          expect(failure).not.toMatch(/[A-Za-z0-9+/]{256,}/); // never base64 as text
          // Right after the batch's tool messages: the user message with this call's frame.
          const user = messages.slice(at).find((m) => m.role === "user") as ChatMessage;
          const parts = user.content as { type: string; text?: string }[];
          const label = parts.findIndex((p) => p.type === "text" && p.text?.includes(`tool call ${id} `));
          expect(label).toBeGreaterThanOrEqual(0);
          const [image] = imagesSent(
            { messages: [{ role: "user", content: [parts[label + 1]] }] },
            episode.records_dir,
          );
          expect(image?.mediaType).toBe("image/webp");
          const bytes = image?.bytes as Uint8Array;
          expect(isLosslessWebp(bytes)).toBe(true);
          const decoded = codecs.decodeWebp(bytes);
          expect([decoded.width, decoded.height]).toEqual([64, 48]);
          expect([...decoded.data.slice(0, 3)]).toEqual([...inertPalette[colour]]);
        }
      } catch (error) {
        console.error(run.context);
        throw error;
      }
    },
    { misreadNonce: true, profile: profile.profile },
  );
}

describeInLoopbackNamespace(
  "images of failed tool results",
  { file: import.meta.path, timeoutMs: 5 * timeoutMs },
  () => {
    beforeAll(async () => {
      await installClients([...clientNames]);
    }, timeoutMs);
    forEachUpstreamProfile((profile) => {
      if (!profile.loaded) {
        for (const client of clientNames)
          test(
            `${client}: a failing record's frame reaches the next upstream request as lossless WebP under its call`,
            () => failedRecordImagesReachUpstream(client, profile),
            timeoutMs,
          );
        return;
      }
      // The slow upstream mostly keeps the clients waiting: the four run at once, each on its own upstream.
      test(
        `every client at once: a failing record's frame reaches the next upstream request as lossless WebP${profile.label}`,
        async () => {
          const runs = await Promise.allSettled(
            clientNames.map((client) => failedRecordImagesReachUpstream(client, profile)),
          );
          const failed = runs.flatMap((r, i) =>
            r.status === "rejected" ? [[clientNames[i], r.reason]] : [],
          );
          if (failed.length > 0) {
            for (const [client, reason] of failed) console.error(`${client}${profile.label}:`, reason);
            throw failed[0]?.[1];
          }
        },
        timeoutMs,
      );
    });
  },
);
