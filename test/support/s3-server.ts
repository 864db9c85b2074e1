/**
 * A real S3-compatible server for tests: @20minutes/s3rver (an s3rver fork that
 * verifies AWS Signature V4, so wrong credentials are refused as on S3) on a
 * loopback port, behind a thin HTTP front that logs every request and can hold
 * one back (to kill the uploader in the middle of it). Listing and reading go
 * through the S3 REST API itself, unsigned (s3rver lets anonymous requests read).
 */
import { mkdtempSync } from "node:fs";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import S3rver from "@20minutes/s3rver";

/** The access key pair s3rver accepts. */
export const s3AccessKeyId = "S3RVER";
export const s3SecretAccessKey = "S3RVER";

export type S3Request = { method: string; path: string; query: string };

export type S3TestServer = {
  endpoint: string;
  requests: S3Request[];
  /** PUTs of whole objects or parts, per key (path without the bucket). */
  putCount: (bucket: string, key: string) => number;
  list: (bucket: string, prefix?: string) => Promise<{ key: string; size: number }[]>;
  get: (bucket: string, key: string) => Promise<Uint8Array | undefined>;
  createBucket: (name: string) => Promise<void>;
  /** Holds the next request matching `match` until `release` (or forever): resolves once it is held. */
  hold: (match: (r: S3Request) => boolean) => { held: Promise<S3Request>; drop: () => void };
  close: () => Promise<void>;
};

export async function startS3Server(buckets: string[]): Promise<S3TestServer> {
  const directory = mkdtempSync(join(tmpdir(), "ura-s3-"));
  const s3 = new S3rver({ silent: true, directory, configureBuckets: buckets.map((name) => ({ name })) });
  await s3.configureBuckets();
  const handle = s3.callback() as (req: IncomingMessage, res: ServerResponse) => void;
  const requests: S3Request[] = [];
  let holder:
    | { match: (r: S3Request) => boolean; onHeld: (r: S3Request) => void; res?: ServerResponse }
    | undefined;
  const http = createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://s3.invalid");
    const request = {
      method: req.method ?? "GET",
      path: decodeURIComponent(url.pathname),
      query: url.search,
    };
    requests.push(request);
    if (holder && !holder.res && holder.match(request)) {
      holder.res = res;
      holder.onHeld(request);
      return;
    }
    handle(req, res);
  });
  await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
  const endpoint = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
  return {
    endpoint,
    requests,
    putCount: (bucket, key) =>
      requests.filter((r) => r.method === "PUT" && r.path === `/${bucket}/${key}`).length,
    async list(bucket, prefix = "") {
      const res = await fetch(
        `${endpoint}/${bucket}?list-type=2&max-keys=1000&prefix=${encodeURIComponent(prefix)}`,
      );
      if (res.status !== 200) throw new Error(`list ${bucket}: HTTP ${res.status} ${await res.text()}`);
      const xml = await res.text();
      return [
        ...xml.matchAll(
          /<Contents>[\s\S]*?<Key>([^<]+)<\/Key>[\s\S]*?<Size>(\d+)<\/Size>[\s\S]*?<\/Contents>/g,
        ),
      ]
        .map((m) => ({ key: m[1] as string, size: Number(m[2]) }))
        .sort((a, b) => a.key.localeCompare(b.key));
    },
    async get(bucket, key) {
      const res = await fetch(`${endpoint}/${bucket}/${key}`);
      if (res.status === 404) return undefined;
      if (res.status !== 200) throw new Error(`get ${bucket}/${key}: HTTP ${res.status}`);
      return new Uint8Array(await res.arrayBuffer());
    },
    async createBucket(name) {
      await s3.store.putBucket(name);
    },
    hold(match) {
      let onHeld: (r: S3Request) => void = () => {};
      const held = new Promise<S3Request>((resolve) => {
        onHeld = resolve;
      });
      holder = { match, onHeld };
      return {
        held,
        drop: () => {
          holder?.res?.destroy();
          holder = undefined;
        },
      };
    },
    async close() {
      holder?.res?.destroy();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}
