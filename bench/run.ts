/**
 * `make bench`: every benchmark, each against a baseline measured in the same run.
 * Prints tables and writes flat named figures to bench/results.json.
 */
import { writeFileSync } from "node:fs";
import { resolve } from "node:path";
import { runBlobWritesBench } from "./blob-writes.ts";
import { runCamera1280Bench } from "./camera-1280.ts";
import { runConcurrentCameraBench } from "./concurrent-camera.ts";
import { runContextBench } from "./context.ts";
import { runDurabilityBench } from "./durability.ts";
import { runExchangeCpuBench } from "./exchange-cpu.ts";
import { runFirstFrameBench } from "./first-frame.ts";
import { runGatewayBench } from "./gateway.ts";
import { runImageBench } from "./images.ts";
import { runLedgerBench } from "./ledger-calls.ts";
import { runLongCameraBench } from "./long-camera.ts";
import { runRecordsBytesBench } from "./records-bytes.ts";
import { runTracingBench } from "./tracing.ts";
import { runUpstreamLoadBench } from "./upstream-load.ts";
import { runWarmUpBench } from "./warm-up.ts";

const results: Record<string, number> = {};
console.log("## Gateway overhead, memory, cold start");
Object.assign(results, await runGatewayBench(console.log));
console.log("\n## CPU per exchange (real recorded client requests)");
Object.assign(results, await runExchangeCpuBench(console.log));
console.log("\n## Records bytes per exchange (real recorded client requests, every turn the same)");
Object.assign(results, await runRecordsBytesBench(console.log));
console.log("\n## Images");
Object.assign(results, await runImageBench(console.log));
console.log("\n## Codec warm-up");
Object.assign(results, await runWarmUpBench(console.log));
console.log("\n## First camera frame after ready; an idle conversion worker");
Object.assign(results, await runFirstFrameBench(console.log));
console.log("\n## Long camera episode");
Object.assign(results, await runLongCameraBench(console.log));
console.log("\n## camera-1280: the provider's prompt cache over a 200-turn 1280×720 episode");
Object.assign(results, await runCamera1280Bench(console.log));
console.log("\n## Many camera episodes at once (memory)");
Object.assign(results, await runConcurrentCameraBench(console.log));
console.log("\n## Context filter");
Object.assign(results, await runContextBench());
console.log("\n## Ledger cost per tool call as an episode grows");
Object.assign(results, await runLedgerBench(console.log));
console.log("\n## Durability (fdatasync of claims)");
Object.assign(results, await runDurabilityBench(console.log));
console.log("\n## Durability (blob writes of new frames)");
Object.assign(results, await runBlobWritesBench(console.log));
console.log("\n## Tracing on / off");
Object.assign(results, await runTracingBench(console.log));
console.log("\n## Upstream load: 20 episodes × 10 turns on a loaded upstream with a shared quota");
Object.assign(results, await runUpstreamLoadBench(console.log));
const path = resolve(import.meta.dir, "results.json");
writeFileSync(path, `${JSON.stringify(results, null, 2)}\n`);
console.log(`\nwrote ${path}`);
for (const [k, v] of Object.entries(results)) console.log(`${k} = ${Number.isInteger(v) ? v : v.toFixed(3)}`);
process.exit(0);
