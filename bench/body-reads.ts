/**
 * `body-reads`: what it costs Bun.serve to take in a large request body, read each way
 * a handler can read it, outside the sidecar: is the sidecar's reader (a stream reader
 * pulled chunk by chunk, src/body/read-body-chunks.ts) dearer than it must be? A child
 * process serves; this one posts 100 MB bodies (a declared length, as the clients send
 * a camera history) to it, the ways alternated, and the child reports per body the
 * process CPU it spent (user and system), its minor page faults and the chunks it got.
 * The floor is a raw TCP socket (Bun.listen) that only counts the bytes it is given.
 *   bun bench/body-reads.ts [MB] [rounds]
 */
import { readBodyChunks } from "../src/body/read-body-chunks.ts";
import { killAtExit } from "../test/support/exit-cleanup.ts";

type Read = { chunks: number; bytes: number; largest: number };

/** The ways a handler can read the body; each counts the bytes and keeps nothing. */
const ways: Record<string, (request: Request) => Promise<Read>> = {
  "arrayBuffer() (one buffer)": async (request) => {
    const bytes = (await request.arrayBuffer()).byteLength;
    return { chunks: 1, bytes, largest: bytes };
  },
  "getReader().read()": async (request) => {
    const reader = (request.body as ReadableStream<Uint8Array>).getReader();
    const read: Read = { chunks: 0, bytes: 0, largest: 0 };
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return read;
      count(read, value);
    }
  },
  "readBodyChunks (the sidecar's, bounded)": async (request) => {
    const read: Read = { chunks: 0, bytes: 0, largest: 0 };
    await readBodyChunks(
      request.body as ReadableStream<Uint8Array>,
      { limitBytes: 256 * 1024 * 1024, signal: new AbortController().signal, onBytes: () => {} },
      (chunk) => count(read, chunk),
    );
    return read;
  },
  "for await": async (request) => {
    const read: Read = { chunks: 0, bytes: 0, largest: 0 };
    for await (const value of request.body as unknown as AsyncIterable<Uint8Array>) count(read, value);
    return read;
  },
  "getReader().readMany() (Bun's)": async (request) => {
    const reader = (request.body as ReadableStream<Uint8Array>).getReader() as unknown as {
      readMany(): Promise<{ done: boolean; value?: Uint8Array[] }>;
    };
    const read: Read = { chunks: 0, bytes: 0, largest: 0 };
    for (;;) {
      const { done, value } = await reader.readMany();
      for (const chunk of value ?? []) count(read, chunk);
      if (done) return read;
    }
  },
  "getReader({ mode: 'byob' })": async (request) => {
    const body = request.body as unknown as { getReader(o: { mode: "byob" }): unknown };
    body.getReader({ mode: "byob" });
    throw new Error("unreachable");
  },
};

function count(read: Read, chunk: Uint8Array): void {
  read.chunks += 1;
  read.bytes += chunk.length;
  read.largest = Math.max(read.largest, chunk.length);
}

type Measured = Read & { userMs: number; systemMs: number; faults: number };

function measure<T>(
  run: () => Promise<T>,
): Promise<{ value: T; userMs: number; systemMs: number; faults: number }> {
  const cpu = process.cpuUsage();
  const faults = process.resourceUsage().minorPageFault;
  return run().then((value) => {
    const spent = process.cpuUsage(cpu);
    return {
      value,
      userMs: spent.user / 1000,
      systemMs: spent.system / 1000,
      faults: process.resourceUsage().minorPageFault - faults,
    };
  });
}

/** The child: a Bun.serve with each way at its own path, and the raw socket floor. */
function serve(bodyBytes: number): void {
  const names = Object.keys(ways);
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    idleTimeout: 0,
    maxRequestBodySize: 2 * bodyBytes,
    async fetch(request) {
      const way = ways[names[Number(new URL(request.url).pathname.slice(1))] ?? ""];
      if (!way) return new Response("no such way", { status: 404 });
      try {
        const { value, ...spent } = await measure(() => way(request));
        return Response.json({ ...value, ...spent });
      } catch (error) {
        return Response.json({ error: error instanceof Error ? error.message : String(error) });
      }
    },
  });
  // The floor: the bytes of one HTTP request as the socket hands them over, nothing else.
  let socketRead:
    | {
        bytes: number;
        chunks: number;
        largest: number;
        head: number;
        started: ReturnType<typeof process.cpuUsage>;
        faults: number;
      }
    | undefined;
  const floor = Bun.listen({
    hostname: "127.0.0.1",
    port: 0,
    socket: {
      open() {
        socketRead = {
          bytes: 0,
          chunks: 0,
          largest: 0,
          head: -1,
          started: process.cpuUsage(),
          faults: process.resourceUsage().minorPageFault,
        };
      },
      data(socket, data) {
        const read = socketRead;
        if (!read) return;
        if (read.head < 0) read.head = data.indexOf("\r\n\r\n") + 4;
        read.bytes += data.length;
        read.chunks += 1;
        read.largest = Math.max(read.largest, data.length);
        if (read.bytes - read.head < bodyBytes) return;
        const spent = process.cpuUsage(read.started);
        const answer = JSON.stringify({
          chunks: read.chunks,
          bytes: read.bytes - read.head,
          largest: read.largest,
          userMs: spent.user / 1000,
          systemMs: spent.system / 1000,
          faults: process.resourceUsage().minorPageFault - read.faults,
        });
        socketRead = undefined;
        socket.end(
          `HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: ${answer.length}\r\n\r\n${answer}`,
        );
      },
    },
  });
  console.log(JSON.stringify({ serve: server.port, floor: floor.port }));
}

const median = (values: number[]) =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? Number.NaN;

export async function runBodyReadsBench(
  log: (line: string) => void = console.log,
  megabytes = 100,
  rounds = 7,
): Promise<Record<string, number>> {
  const bodyBytes = megabytes * 1024 * 1024;
  const child = Bun.spawn([process.execPath, import.meta.path, "--serve", String(bodyBytes)], {
    stdout: "pipe",
    stderr: "inherit",
  });
  killAtExit(child);
  try {
    const first = (await child.stdout.getReader().read()).value;
    const ports = JSON.parse(new TextDecoder().decode(first)) as { serve: number; floor: number };
    const body = "A".repeat(bodyBytes);
    const targets = [
      { name: "raw TCP socket (the floor)", url: `http://127.0.0.1:${ports.floor}/` },
      ...Object.keys(ways).map((name, i) => ({ name, url: `http://127.0.0.1:${ports.serve}/${i}` })),
    ];
    const results = new Map<string, (Measured & { error?: string })[]>();
    for (let round = 0; round < rounds; round++)
      for (const target of targets) {
        const answer = (await (await fetch(target.url, { method: "POST", body })).json()) as Measured & {
          error?: string;
        };
        results.set(target.name, [...(results.get(target.name) ?? []), answer]);
      }
    log(
      `${megabytes} MB bodies (content-length), ${rounds} rounds alternated; medians of the serving process:`,
    );
    log("| read as | CPU ms (user + system) | page faults | chunks (largest) |");
    log("|---|---|---|---|");
    const figures: Record<string, number> = {};
    targets.forEach((target, i) => {
      const runs = results.get(target.name) ?? [];
      const error = runs[0]?.error;
      if (error !== undefined) {
        log(`| ${target.name} | refused: ${error} | | |`);
        return;
      }
      const user = median(runs.map((r) => r.userMs));
      const system = median(runs.map((r) => r.systemMs));
      log(
        `| ${target.name} | ${(user + system).toFixed(1)} (${user.toFixed(1)} + ${system.toFixed(1)}) | ` +
          `${median(runs.map((r) => r.faults))} | ${median(runs.map((r) => r.chunks))} (${median(runs.map((r) => r.largest))}) |`,
      );
      figures[`body_reads_${i}_cpu_ms`] = user + system;
    });
    return figures;
  } finally {
    child.kill();
    await child.exited;
  }
}

if (process.argv[2] === "--serve") serve(Number(process.argv[3]));
else if (import.meta.main)
  await runBodyReadsBench(console.log, Number(process.argv[2] ?? 100), Number(process.argv[3] ?? 7));
