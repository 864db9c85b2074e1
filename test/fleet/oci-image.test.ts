/**
 * The OCI image (`make image`, deploy/image/build-image.sh) built with buildah and run
 * with `buildah run` (chroot isolation; no daemon, no user namespaces needed): its
 * configuration (non-root user, /data volume, container listen address, labels), its
 * root filesystem (the binary, the libraries ldd lists, nothing else), then the image
 * serving: /health/ready, a smoke exchange, records in the mounted volume (written by
 * the image's user), and SIGTERM to the contained process draining to exit 0 with the
 * records frozen. Slow (a 100 MB layer through vfs storage): one build for the file.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { binaryPath, controlPassword, type LaunchInfo } from "../support/sidecar-process.ts";
import { sendSmokeMessage } from "../support/smoke-message.ts";

const root = resolve(import.meta.dir, "../..");
const image = `localhost/ura-sidecar:test-${process.pid}`;
const archive = join(mkdtempSync(join(tmpdir(), "ura-image-")), "image.oci.tar");
const env: Record<string, string | undefined> = {
  ...process.env,
  STORAGE_DRIVER: "vfs",
  BUILDAH_ISOLATION: "chroot",
  URA_IMAGE: image,
  URA_IMAGE_ARCHIVE: archive,
};
const uid = 65532;

async function run(cmd: string[], options: { stdin?: Blob } = {}) {
  const proc = Bun.spawn(cmd, {
    cwd: root,
    env,
    stdout: "pipe",
    stderr: "pipe",
    stdin: options.stdin ?? "ignore",
  });
  const [out, err] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text()]);
  return { code: await proc.exited, out, err };
}

let buildOutput = "";
beforeAll(async () => {
  const built = await run(["bash", "deploy/image/build-image.sh", binaryPath], {});
  buildOutput = built.out + built.err;
  if (built.code !== 0) throw new Error(`image build failed (${built.code}):\n${buildOutput}`);
}, 300_000);
afterAll(async () => {
  await run(["buildah", "rmi", "--force", image]);
});

/** The contained process of a `buildah run`: its descendant running the binary (found by parent pid, never by name). */
function containedPid(root: number): number | undefined {
  const parents = new Map<number, number>();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = (() => {
      try {
        return readFileSync(`/proc/${entry}/stat`, "utf8");
      } catch {
        return undefined; // exited meanwhile
      }
    })();
    // pid (comm) state ppid …: comm may hold spaces, so read after the last ")".
    const ppid = stat ? Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]) : Number.NaN;
    if (Number.isFinite(ppid)) parents.set(Number(entry), ppid);
  }
  const descendants = [root];
  for (let i = 0; i < descendants.length; i++) {
    for (const [pid, ppid] of parents) if (ppid === descendants[i]) descendants.push(pid);
  }
  return descendants.find((pid) => {
    try {
      return readFileSync(`/proc/${pid}/comm`, "utf8").trim() === "ura-sidecar";
    } catch {
      return false;
    }
  });
}

describe("OCI image", () => {
  test("the build prints the image size and the start-up-to-ready time, and writes the oci-archive", () => {
    expect(buildOutput).toMatch(/image size\s+\d+(\.\d+)? ?[kMG]?B/);
    expect(buildOutput).toMatch(/ready after\s+\d+ ms/);
    expect(statSync(archive).size).toBeGreaterThan(10_000_000);
  });

  test("configuration: non-root user, /data volume, container listen address, version and revision labels", async () => {
    const inspected = await run(["buildah", "inspect", "--type", "image", image]);
    const config = JSON.parse(inspected.out).OCIv1.config;
    expect(config.User).toBe(`${uid}:${uid}`);
    expect(Object.keys(config.Volumes)).toEqual(["/data"]);
    expect(config.Env).toContain("URA_LISTEN=0.0.0.0:8787");
    expect(config.Env).toContain("URA_DATA_DIR=/data");
    expect(config.Entrypoint).toEqual(["/ura-sidecar"]);
    expect(Object.keys(config.ExposedPorts)).toEqual(["8787/tcp"]);
    const version = JSON.parse(readFileSync(join(root, "package.json"), "utf8")).version;
    expect(config.Labels["org.opencontainers.image.version"]).toBe(version);
    const head = (await run(["git", "rev-parse", "HEAD"])).out.trim();
    expect(config.Labels["org.opencontainers.image.revision"]).toMatch(new RegExp(`^${head}(-dirty)?$`));
  });

  test("the archive's root filesystem: the binary and exactly the libraries ldd lists", async () => {
    const index = JSON.parse((await run(["tar", "-xOf", archive, "index.json"])).out);
    const manifestDigest = index.manifests[0].digest.replace("sha256:", "");
    const manifest = JSON.parse((await run(["tar", "-xOf", archive, `blobs/sha256/${manifestDigest}`])).out);
    expect(manifest.layers).toHaveLength(1);
    const layer = manifest.layers[0].digest.replace("sha256:", "");
    const listing = await run(["bash", "-c", `tar -xOf '${archive}' 'blobs/sha256/${layer}' | tar -tzf -`]);
    const files = listing.out
      .split("\n")
      .map((f) => f.replace(/^\.?\/?/, "/"))
      .filter((f) => f !== "/" && !f.endsWith("/"));
    const libraries = (await run(["ldd", binaryPath])).out.match(/\/\S+/g) ?? [];
    expect(files.sort()).toEqual(["/ura-sidecar", "/etc/passwd", "/etc/group", ...new Set(libraries)].sort());
  });

  test("runs: ready, a smoke exchange, records in the mounted volume, SIGTERM drains to exit 0", async () => {
    const data = mkdtempSync(join(tmpdir(), "ura-image-data-"));
    chownSync(data, uid, uid);
    const container = (await run(["buildah", "from", "--quiet", image])).out.trim();
    // buildah run (1.28, chroot) mounts the image's declared volume over a --volume on the same path:
    // this working container drops the declaration so the host directory is what /data shows.
    await run(["buildah", "config", "--volume", "/data-", container]);
    // Below the kernel's ephemeral range (32768+), where outgoing connections and port-0 listeners land.
    const port = 20_000 + Math.floor(Math.random() * 12_000);
    const url = `http://127.0.0.1:${port}`;
    const proc = Bun.spawn(
      [
        "buildah",
        "run",
        "--volume",
        `${data}:/data`,
        "--env",
        `URA_LISTEN=127.0.0.1:${port}`,
        "--env",
        `URA_CONTROL_PASSWORD=${controlPassword}`,
        container,
        "--",
        "/ura-sidecar",
        "serve",
      ],
      { cwd: root, env, stdout: "pipe", stderr: "pipe" },
    );
    let output = "";
    const pump = async (stream: ReadableStream<Uint8Array>) => {
      for await (const chunk of stream) output += new TextDecoder().decode(chunk);
    };
    void pump(proc.stdout);
    void pump(proc.stderr);
    try {
      const deadline = Date.now() + 60_000;
      let ready = 0;
      while (Date.now() < deadline && ready !== 200 && proc.exitCode === null) {
        ready = await fetch(`${url}/health/ready`).then(
          (r) => r.status,
          () => 0,
        );
        if (ready !== 200) await Bun.sleep(50);
      }
      expect({ ready, output: ready === 200 ? "" : output }).toEqual({ ready: 200, output: "" });
      const created = await fetch(`${url}/control/episodes`, {
        method: "POST",
        headers: { authorization: `Bearer ${controlPassword}`, "content-type": "application/json" },
        body: "{}",
      });
      expect(created.status).toBe(201);
      const episode = (await created.json()) as LaunchInfo;
      const answer = await sendSmokeMessage(episode);
      expect(answer.status).toBe(200);
      expect(((await answer.json()) as { type: string }).type).toBe("message");

      const dir = join(data, "episodes", episode.id);
      const stages = readFileSync(join(dir, "exchanges.jsonl"), "utf8")
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l).stage);
      expect(stages).toContain("delivered");
      expect(statSync(join(dir, "exchanges.jsonl")).uid).toBe(uid);

      const pid = containedPid(proc.pid);
      expect(pid).toBeDefined();
      process.kill(pid as number, "SIGTERM");
      expect(await proc.exited).toBe(0);
      expect(output).toContain("shutdown complete");
      expect(JSON.parse(readFileSync(join(dir, "frozen.json"), "utf8"))).toMatchObject({
        complete: true,
        reason: "signal SIGTERM",
      });
      expect(readdirSync(dir).sort()).toEqual(
        expect.arrayContaining(["episode.json", "exchanges.jsonl", "frozen.json"]),
      );
    } finally {
      if (proc.exitCode === null) proc.kill("SIGKILL");
      await run(["buildah", "rm", container]);
    }
    expect(existsSync(data)).toBe(true);
  }, 120_000);
});
