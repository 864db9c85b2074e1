/**
 * `ura-sidecar client-config <client> --episode <id | launch.json> --out DIR`:
 * writes the client's kit for one episode. With an id, the launch info comes from
 * a running sidecar's control API (`--sidecar URL`, password in
 * URA_CONTROL_PASSWORD); with a path, from the JSON that `POST /control/episodes`
 * returned. `--new-episode` creates the episode through the control API instead,
 * with `--context-policy NAME` as its context policy (body_budget for a camera
 * episode, docs/long-sessions.md); an episode's policy is fixed at its creation, so
 * with `--episode` the flag checks that the episode has it. It also says which
 * version of the client the kit will run (`--binary`, else the client's command on
 * PATH) and warns when that is not a proven version (src/clients/proven-version.ts).
 */
import { existsSync, readFileSync } from "node:fs";
import { type ClientName, clientNameSchema, clientNames } from "../clients/client-manifests.ts";
import { givenBinary } from "../clients/installed-clients.ts";
import { type FoundClient, provenVersionNote } from "../clients/proven-version.ts";
import { contextPolicySchema } from "../context/policy-schema.ts";
import { createKit } from "../kits/create-kit.ts";
import { type LaunchInfo, launchInfoSchema } from "../kits/launch-info.ts";
import { errorMessage } from "../lib/error-message.ts";
import { parseFlags, usageError } from "./command-flags.ts";

const policyNames = contextPolicySchema.unwrap().options.map((option) => option.shape.policy.value);
type PolicyName = (typeof policyNames)[number];

export const usage = `usage: ura-sidecar client-config <${clientNames.join("|")}> (--episode <id | launch.json> | --new-episode)
       --out DIR [--context-policy <${policyNames.join("|")}>] [--sidecar URL (default http://127.0.0.1:8787)]
       [--binary PATH]`;

function controlUrl(sidecar: string, path: string): string {
  return `${sidecar.replace(/\/$/, "")}/control${path}`;
}

/** A control API request; a sidecar that does not answer is said plainly, with the way out. */
async function control(sidecar: string, url: string, init: RequestInit): Promise<Response> {
  try {
    return await fetch(url, init);
  } catch (error) {
    throw new Error(
      `no sidecar answers at ${sidecar} (${errorMessage(error).split(":")[0]}): start one (\`make run\`, or \`ura-sidecar serve\`), or give its address with --sidecar URL`,
    );
  }
}

/** A new episode with the given context policy (its defaults), created through the control API. */
async function createEpisode(
  sidecar: string,
  password: string | undefined,
  policy: PolicyName | undefined,
): Promise<LaunchInfo> {
  if (!password) throw new Error("creating an episode needs the control password in URA_CONTROL_PASSWORD");
  const url = controlUrl(sidecar, "/episodes");
  const res = await control(sidecar, url, {
    method: "POST",
    headers: { authorization: `Bearer ${password}`, "content-type": "application/json" },
    body: JSON.stringify(policy === undefined ? {} : { context: { policy } }),
  });
  if (!res.ok) throw new Error(`POST ${url}: HTTP ${res.status} ${(await res.text()).slice(0, 300)}`);
  return launchInfoSchema.parse(await res.json());
}

/** The policy an episode's launch info names (absent in launch info written before it carried one). */
function policyOf(episode: LaunchInfo): string | undefined {
  const context = (episode as { context_policy?: { policy?: unknown } }).context_policy;
  return typeof context?.policy === "string" ? context.policy : undefined;
}

/**
 * Launch info from a file. The records' episode.json has the same name and the same
 * episode but no credentials (digests only): say which file is meant, not a schema dump.
 */
function readLaunchInfoFile(path: string): LaunchInfo {
  const parsed = launchInfoSchema.safeParse(JSON.parse(readFileSync(path, "utf8")));
  if (parsed.success) return parsed.data;
  const fields = [...new Set(parsed.error.issues.map((issue) => issue.path.map(String).join(".")))];
  throw new Error(
    `is not launch info (the JSON POST /control/episodes returns): ${fields.join(", ")} missing or not valid` +
      " (the records' episode.json holds credential digests only; give the episode id instead)",
  );
}

/** The client the kit will launch: a path as given, else the command on PATH; its --version. */
async function findClient(client: ClientName, bin: string): Promise<FoundClient> {
  const path = bin.includes("/") ? (existsSync(bin) ? bin : undefined) : (Bun.which(bin) ?? undefined);
  if (path === undefined) return undefined;
  const found = await givenBinary(client, path, process.cwd());
  return { bin: found.bin, version: found.version };
}

async function readEpisode(
  episode: string,
  sidecar: string,
  password: string | undefined,
): Promise<LaunchInfo> {
  if (existsSync(episode)) return readLaunchInfoFile(episode);
  if (!password)
    throw new Error("reading an episode by id needs the control password in URA_CONTROL_PASSWORD");
  const url = controlUrl(sidecar, `/episodes/${encodeURIComponent(episode)}/launch`);
  const res = await control(sidecar, url, { headers: { authorization: `Bearer ${password}` } });
  if (!res.ok) throw new Error(`GET ${url}: HTTP ${res.status} ${(await res.text()).slice(0, 300)}`);
  return launchInfoSchema.parse(await res.json());
}

export async function clientConfigCommand(
  args: string[],
  env: Record<string, string | undefined>,
): Promise<number> {
  const fail = usageError("client-config", usage);
  const parsed = parseFlags({
    args,
    options: {
      episode: { type: "string" },
      "new-episode": { type: "boolean" },
      "context-policy": { type: "string" },
      out: { type: "string" },
      sidecar: { type: "string" },
      binary: { type: "string" },
    },
    allowPositionals: true,
  });
  if (parsed instanceof Error) return fail(parsed.message);
  const { values, positionals } = parsed;
  const client = clientNameSchema.safeParse(positionals[0]);
  const policy = values["context-policy"];
  const problem = !client.success
    ? `unknown client ${JSON.stringify(positionals[0] ?? "")}`
    : positionals.length !== 1 || !values.out || !values.episode === !values["new-episode"]
      ? "--out and one of --episode or --new-episode are required"
      : policy !== undefined && !policyNames.includes(policy as PolicyName)
        ? `unknown --context-policy ${JSON.stringify(policy)}`
        : undefined;
  if (problem || !client.success || !values.out) return fail(problem ?? "");
  const sidecar = values.sidecar ?? "http://127.0.0.1:8787";
  let episode: LaunchInfo;
  try {
    episode = values.episode
      ? await readEpisode(values.episode, sidecar, env.URA_CONTROL_PASSWORD)
      : await createEpisode(sidecar, env.URA_CONTROL_PASSWORD, policy as PolicyName | undefined);
  } catch (error) {
    console.error(`ura-sidecar client-config: episode ${values.episode ?? "(new)"}: ${errorMessage(error)}`);
    return 1;
  }
  if (policy !== undefined && policyOf(episode) !== policy) {
    console.error(
      `ura-sidecar client-config: episode ${episode.id} has the context policy ${policyOf(episode) ?? "(unknown)"}, not ${policy}; ` +
        `a policy is chosen when an episode is created: use --new-episode --context-policy ${policy}`,
    );
    return 1;
  }
  const kit = createKit({ client: client.data, episode, dir: values.out, bin: values.binary });
  const note = provenVersionNote(client.data, await findClient(client.data, kit.plan.bin), kit.plan.bin);
  for (const w of [...kit.warnings, ...(note.warning ? [note.warning] : [])])
    console.error(`ura-sidecar client-config: warning: ${w}`);
  console.log(`${client.data} kit for episode ${episode.id} written to ${kit.dir}`);
  console.log(`  client       ${note.summary}`);
  console.log(`  context      ${policyOf(episode) ?? "(unknown)"}`);
  console.log(`  credentials  ${kit.credentials} (mode 0600)`);
  for (const f of kit.files) console.log(`  config       ${f}`);
  console.log(`  run it       ${kit.launch} "<prompt>"`);
  return 0;
}
