/**
 * Settings of record shipping: every ended episode's records, and the image blobs
 * they refer to, copied to one S3-compatible bucket. Absent = shipping off.
 * Credentials are not settings: they come from the standard AWS_* environment
 * variables or an AWS shared-credentials file (s3-credentials.ts), never argv.
 */
import { z } from "zod";

export const shippingRetrySchema = z
  .object({
    /** First wait after a failed attempt; doubles per failure up to max_backoff_ms. */
    initial_backoff_ms: z.number().int().positive().default(1_000),
    /** Longest wait between attempts: a bucket that refuses is tried again at this pace, forever. */
    max_backoff_ms: z.number().int().positive().default(300_000),
  })
  .strict();

export const shippingSchema = z
  .object({
    /** S3 API endpoint, e.g. https://s3.eu-central-1.amazonaws.com or http://minio.lab:9000 (default: AWS_ENDPOINT_URL_S3 / AWS_ENDPOINT_URL). */
    endpoint: z.url().optional(),
    bucket: z.string().min(3).max(63),
    /** Key prefix, e.g. "lab-1/" ; episodes land at <prefix>episodes/<id>/, blobs at <prefix>blobs/sha256/<hex>. */
    prefix: z
      .string()
      .default("")
      .refine((p) => p === "" || (p.endsWith("/") && !p.startsWith("/")), {
        message: 'expected "" or a prefix ending in "/" (not starting with "/"), e.g. "lab-1/"',
      }),
    /** Signing region (default: AWS_REGION / AWS_DEFAULT_REGION, else us-east-1). */
    region: z.string().min(1).optional(),
    /** Path-style URLs (endpoint/bucket/key), what most S3-compatible servers expect; false = virtual-hosted. */
    path_style: z.boolean().default(true),
    /** AWS shared-credentials file (INI) read when AWS_ACCESS_KEY_ID is not set. */
    credentials_file: z.string().min(1).optional(),
    /** Profile in the credentials file (default: AWS_PROFILE, else "default"). */
    profile: z.string().min(1).optional(),
    /** Who shipped it (written into each episode's shipped.json), e.g. the robot or pod name (default: the host name). */
    source: z.string().min(1).max(200).optional(),
    /** An ended episode is shipped once its records have not changed for this long (the client's last text answer comes after the finish call). */
    settle_ms: z.number().int().min(0).default(5_000),
    /** How often ended episodes are looked for. */
    poll_ms: z.number().int().min(10).default(1_000),
    /** Objects of one episode uploaded at once. */
    concurrency: z.number().int().min(1).max(32).default(4),
    /** Files at least this large go up as multipart uploads in parts of this size (S3 minimum 5 MiB). */
    part_size_bytes: z
      .number()
      .int()
      .min(5 * 1024 * 1024)
      .default(8 * 1024 * 1024),
    retry: shippingRetrySchema.default(shippingRetrySchema.parse({})),
    /**
     * Local retention after shipping, off by default: at start-up, delete the local records
     * directory of an episode shipped (unchanged since) more than this long ago. Blobs are
     * shared between episodes and are never deleted here.
     */
    delete_local_after_ms: z.number().int().positive().optional(),
  })
  .strict();

export type ShippingConfig = z.infer<typeof shippingSchema>;
