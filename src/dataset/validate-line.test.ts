import { beforeAll, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { finishTool, observeTool } from "../../test/support/dataset-kit.ts";
import { type Codecs, loadCodecs } from "../images/codecs.ts";
import { solidColourPng } from "../images/generate-png.ts";
import { webpSettingsSchema } from "../images/settings.ts";
import type { WireRequest } from "./build-conversations.ts";
import { createSecretFinder } from "./find-secrets.ts";
import { parseDataUrl } from "./render-line.ts";
import { type CheckName, pixelDigest, validateLine } from "./validate-line.ts";

let codecs: Codecs;
let png: Uint8Array;
let webp: Uint8Array;
beforeAll(async () => {
  codecs = await loadCodecs();
  png = solidColourPng(4, 4, [10, 20, 30]);
  webp = codecs.encodeWebpLossless(codecs.decodePng(png), webpSettingsSchema.parse({}));
});

const call = (id: string, name = "ura_observe", args = "{}") => ({
  id,
  type: "function",
  function: { name, arguments: args },
});

function baseRequest(): WireRequest {
  const url = `data:image/webp;base64,${Buffer.from(webp).toString("base64")}`;
  return {
    messages: [
      { role: "system", content: "You drive a robot." },
      { role: "user", content: "Go." },
      { role: "assistant", content: null, tool_calls: [call("c1")] },
      { role: "tool", tool_call_id: "c1", content: "seen" },
      { role: "user", content: [{ type: "image_url", image_url: { url } }] },
    ],
    tools: [finishTool, observeTool],
  };
}

function check(
  mutate: (line: { messages: Record<string, unknown>[]; tools: unknown[] }) => void,
  request = baseRequest(),
) {
  const hex = createHash("sha256").update(webp).digest("hex");
  const file = `images/sha256-${hex}.webp`;
  const messages = structuredClone(request.messages).map((m) =>
    Array.isArray(m.content) ? { ...m, content: [{ type: "image_url", image_url: { url: file } }] } : m,
  );
  const line = {
    messages: [
      ...messages,
      { role: "assistant", content: null, tool_calls: [call("c2", "ura_finish", '{"answer":"red"}')] },
    ],
    tools: structuredClone(request.tools ?? []),
  };
  mutate(line);
  const frames = { pixels: new Set([pixelDigest(codecs.decodePng(png))]), bytes: new Set<string>() };
  return validateLine({
    lineText: JSON.stringify(line),
    files: new Map([[file, webp]]),
    request,
    source: (url) => parseDataUrl(url as string) ?? { mediaType: "", bytes: new Uint8Array() },
    frames,
    codecs,
    findSecrets: createSecretFinder(["hunter2-secret"]),
  });
}

type Line = { messages: Record<string, unknown>[]; tools: unknown[] };
function lastCall(l: Line): ReturnType<typeof call> {
  const found = (l.messages.at(-1) as { tool_calls?: ReturnType<typeof call>[] }).tool_calls?.[0];
  if (!found) throw new Error("the line's answer has no call");
  return found;
}

const checksOf = (problems: { check: CheckName }[]) => [...new Set(problems.map((p) => p.check))];

test("a faithful line passes every check", () => {
  expect(check(() => {})).toEqual([]);
});

test("a call without a result, and a result without a call, fail the pairing check", () => {
  expect(checksOf(check((l) => l.messages.splice(3, 1)))).toContain("tool calls and results pair up");
  const orphan = check((l) => {
    (l.messages[3] as { tool_call_id: string }).tool_call_id = "nope";
  });
  expect(orphan.map((p) => p.problem).join()).toContain('result for "nope"');
});

test("a repeated call id fails the uniqueness check", () => {
  const problems = check((l) => {
    lastCall(l).id = "c1";
  });
  expect(checksOf(problems)).toContain("tool call ids are unique");
});

test("arguments that are not JSON, miss a required field, or name an undeclared tool fail", () => {
  expect(
    checksOf(
      check((l) => {
        lastCall(l).function.arguments = "{nope";
      }),
    ),
  ).toEqual(["arguments are JSON matching the tool's schema"]);
  expect(
    checksOf(
      check((l) => {
        lastCall(l).function.arguments = "{}";
      }),
    ),
  ).toEqual(["arguments are JSON matching the tool's schema"]);
  expect(
    checksOf(
      check((l) => {
        lastCall(l).function.name = "ura_fly";
      }),
    ),
  ).toEqual(["arguments are JSON matching the tool's schema"]);
});

test("the plugin's private call-id argument is found", () => {
  const problems = check((l) => {
    lastCall(l).function.arguments = '{"answer":"red","_callID":"c2"}';
  });
  expect(checksOf(problems)).toContain("no sidecar-private fields");
});

test("an image that is not the frame the client sent, or is missing, fails the image check", () => {
  const other = codecs.encodeWebpLossless(
    codecs.decodePng(solidColourPng(4, 4, [10, 20, 31])),
    webpSettingsSchema.parse({}),
  );
  const request = baseRequest();
  request.messages[4] = {
    role: "user",
    content: [
      {
        type: "image_url",
        image_url: { url: `data:image/webp;base64,${Buffer.from(other).toString("base64")}` },
      },
    ],
  };
  const problems = check((l) => {
    l.messages[4] = {
      role: "user",
      content: [
        {
          type: "image_url",
          image_url: { url: `data:image/webp;base64,${Buffer.from(other).toString("base64")}` },
        },
      ],
    };
  }, request);
  expect(problems.map((p) => p.problem).join()).toContain("matches no frame the client sent");
  expect(
    checksOf(
      check((l) => {
        l.messages[4] = {
          role: "user",
          content: [{ type: "image_url", image_url: { url: "images/sha256-00.webp" } }],
        };
      }),
    ),
  ).toContain("images present, decodable, pixel-identical to the frames sent");
});

test("a secret fails the secret check, by shape or by value", () => {
  expect(
    checksOf(
      check((l) => {
        l.messages[1] = { role: "user", content: "key ura_key_abcdefghijklmnopqrstuvwxyz0123" };
      }),
    ),
  ).toContain("no secrets");
  expect(
    checksOf(
      check((l) => {
        l.messages[1] = { role: "user", content: "pw hunter2-secret" };
      }),
    ),
  ).toContain("no secrets");
});

test("a system prompt or tool list other than the one sent fails", () => {
  expect(
    check((l) => {
      l.messages[0] = { role: "system", content: "Other." };
    }).map((p) => p.problem),
  ).toContain("the system prompt differs from the one sent");
  expect(
    check((l) => {
      l.tools.pop();
    }).map((p) => p.problem),
  ).toContain("the tool definitions differ from the ones sent");
});
