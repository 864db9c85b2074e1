/**
 * Builds record shipping from its settings: the S3 client (Bun's built-in one)
 * with credentials from the environment or a credentials file, the upload
 * journal of this data directory, and the background shipper. Credentials are
 * registered with the redactor so no log line or record can carry them.
 */
import { hostname } from "node:os";
import { resolve } from "node:path";
import { S3Client } from "bun";
import type { ShippingConfig } from "../config/shipping-config.ts";
import type { Logger } from "../lib/logger.ts";
import { resolveS3Credentials } from "./s3-credentials.ts";
import { createShipper, type ShippableEpisode, type Shipper } from "./shipper.ts";
import { openUploadJournal, type UploadJournal } from "./upload-journal.ts";

export type ShippingDeps = {
  config: ShippingConfig;
  env: Record<string, string | undefined>;
  dataDir: string;
  episodes: () => ShippableEpisode[];
  registerSecret: (secret: string) => void;
  logger: Logger;
  clock: () => number;
};

/** Record shipping as built: the background shipper, its journal, and where it ships to. */
export interface Shipping {
  shipper: Shipper;
  journal: UploadJournal;
  /** The S3 endpoint; undefined: AWS's own, by region. */
  endpoint: string | undefined;
  region: string;
}

export function createShipping(deps: ShippingDeps): Shipping {
  const { config, env } = deps;
  const credentials = resolveS3Credentials(config, env);
  deps.registerSecret(credentials.secretAccessKey);
  if (credentials.sessionToken) deps.registerSecret(credentials.sessionToken);
  const endpoint = config.endpoint ?? env.AWS_ENDPOINT_URL_S3 ?? env.AWS_ENDPOINT_URL;
  const region = config.region ?? env.AWS_REGION ?? env.AWS_DEFAULT_REGION ?? "us-east-1";
  const s3 = new S3Client({
    ...credentials,
    bucket: config.bucket,
    region,
    ...(endpoint ? { endpoint } : {}),
    virtualHostedStyle: !config.path_style,
  });
  const dataDir = resolve(deps.dataDir);
  const journal = openUploadJournal({
    dataDir,
    target: `${endpoint ?? `s3.${region}.amazonaws.com`}/${config.bucket}`,
    clock: deps.clock,
  });
  const logger = deps.logger.child({ component: "shipping" });
  // In a pod the host name is the pod name: shipped.json then says which robot shipped it.
  const shipper = createShipper({
    config: { ...config, source: config.source ?? hostname() },
    s3,
    journal,
    dataDir,
    episodes: deps.episodes,
    logger,
    clock: deps.clock,
  });
  return { shipper, journal, endpoint, region };
}
