/**
 * A stand-in for a bench caught mid-run (exit-cleanup.test.ts): it starts what a bench
 * starts through the benches' shared support — the instant upstream, a sidecar (the
 * compiled binary) with the data and config directories made for it, and a temporary
 * directory of its own — prints their process ids and directories as one JSON line,
 * then waits to be killed.
 */
import { spawnInstantUpstream } from "../../bench/spawn-server.ts";
import { temporaryDirectory } from "./exit-cleanup.ts";
import { startSidecarProcess } from "./sidecar-process.ts";

const upstream = await spawnInstantUpstream();
const sidecar = await startSidecarProcess({ upstreamUrl: upstream.url, config: {} });
const own = temporaryDirectory("ura-bench-held-");
const episode = await sidecar.createEpisode({});
console.log(
  JSON.stringify({
    pids: [upstream.proc.pid, sidecar.proc.pid],
    dirs: [own, sidecar.dataDir, episode.records_dir],
  }),
);
await new Promise(() => {});
