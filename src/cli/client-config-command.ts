/**
 * `ura-sidecar client-config <client> --episode <id | episode.json> --out DIR`:
 * writes the client's kit for one episode. With an id, the launch info comes from
 * a running sidecar's control API (`--sidecar URL`, password in
 * URA_CONTROL_PASSWORD); with a path, from the JSON that `POST /control/episodes`
 * returned.
 */
import { existsSync, readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { clientNameSchema, clientNames } from "../clients/client-manifests.ts";
import { createKit } from "../kits/create-kit.ts";
import { type LaunchInfo, launchInfoSchema } from "../kits/launch-info.ts";

const usage = `usage: ura-sidecar client-config <${clientNames.join("|")}> --episode <id | episode.json> --out DIR
       [--sidecar URL (default http://127.0.0.1:8787)] [--binary PATH]`;

async function readEpisode(
  episode: string,
  sidecar: string,
  password: string | undefined,
): Promise<LaunchInfo> {
  if (existsSync(episode)) return launchInfoSchema.parse(JSON.parse(readFileSync(episode, "utf8")));
  if (!password)
    throw new Error("reading an episode by id needs the control password in URA_CONTROL_PASSWORD");
  const url = `${sidecar.replace(/\/$/, "")}/control/episodes/${encodeURIComponent(episode)}/launch`;
  const res = await fetch(url, { headers: { authorization: `Bearer ${password}` } });
  if (!res.ok) throw new Error(`GET ${url}: HTTP ${res.status} ${(await res.text()).slice(0, 300)}`);
  return launchInfoSchema.parse(await res.json());
}

export async function clientConfigCommand(
  args: string[],
  env: Record<string, string | undefined>,
): Promise<number> {
  let parsed: {
    values: { episode?: string; out?: string; sidecar?: string; binary?: string };
    positionals: string[];
  };
  try {
    parsed = parseArgs({
      args,
      options: {
        episode: { type: "string" },
        out: { type: "string" },
        sidecar: { type: "string" },
        binary: { type: "string" },
      },
      allowPositionals: true,
      strict: true,
    });
  } catch (error) {
    console.error(`ura-sidecar client-config: ${(error as Error).message}\n${usage}`);
    return 2;
  }
  const { values, positionals } = parsed;
  const client = clientNameSchema.safeParse(positionals[0]);
  if (!client.success || positionals.length !== 1 || !values.episode || !values.out) {
    console.error(
      `ura-sidecar client-config: ${client.success ? "--episode and --out are required" : `unknown client ${JSON.stringify(positionals[0] ?? "")}`}\n${usage}`,
    );
    return 2;
  }
  let episode: LaunchInfo;
  try {
    episode = await readEpisode(
      values.episode,
      values.sidecar ?? "http://127.0.0.1:8787",
      env.URA_CONTROL_PASSWORD,
    );
  } catch (error) {
    console.error(`ura-sidecar client-config: episode ${values.episode}: ${(error as Error).message}`);
    return 1;
  }
  const kit = createKit({ client: client.data, episode, dir: values.out, bin: values.binary });
  for (const w of kit.warnings) console.error(`ura-sidecar client-config: warning: ${w}`);
  console.log(`${client.data} kit for episode ${episode.id} written to ${kit.dir}`);
  console.log(`  credentials  ${kit.credentials} (mode 0600)`);
  for (const f of kit.files) console.log(`  config       ${f}`);
  console.log(`  run it       ${kit.launch} "<prompt>"`);
  return 0;
}
