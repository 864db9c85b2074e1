/**
 * Where the bucket's credentials come from, in the AWS SDKs' order: the
 * AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY / AWS_SESSION_TOKEN environment
 * variables, else a shared-credentials file (INI, `[profile]` sections with
 * aws_access_key_id, aws_secret_access_key, aws_session_token) named by
 * `shipping.credentials_file` or AWS_SHARED_CREDENTIALS_FILE. Never argv, never
 * the config file itself: the values are secrets (registered with the redactor).
 */
import { readFileSync } from "node:fs";
import type { ShippingConfig } from "../config/shipping-config.ts";
import { errorMessage } from "../lib/error-message.ts";

export type S3Credentials = { accessKeyId: string; secretAccessKey: string; sessionToken?: string };

export class CredentialsError extends Error {
  override name = "CredentialsError";
}

/** `[section]` → key → value of an INI file (comments `#`/`;`, whitespace trimmed). */
export function parseIni(text: string): Map<string, Map<string, string>> {
  const sections = new Map<string, Map<string, string>>();
  let current: Map<string, string> | undefined;
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.trim();
    if (line === "" || line.startsWith("#") || line.startsWith(";")) continue;
    const header = /^\[\s*(?:profile\s+)?([^\]]+?)\s*\]$/.exec(line);
    if (header) {
      current = new Map();
      sections.set(header[1] as string, current);
      continue;
    }
    const eq = line.indexOf("=");
    if (eq > 0 && current) current.set(line.slice(0, eq).trim().toLowerCase(), line.slice(eq + 1).trim());
  }
  return sections;
}

export function resolveS3Credentials(
  config: Pick<ShippingConfig, "credentials_file" | "profile">,
  env: Record<string, string | undefined>,
): S3Credentials {
  if (env.AWS_ACCESS_KEY_ID || env.AWS_SECRET_ACCESS_KEY) {
    if (!env.AWS_ACCESS_KEY_ID || !env.AWS_SECRET_ACCESS_KEY) {
      throw new CredentialsError(
        "shipping: set both AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or neither",
      );
    }
    return {
      accessKeyId: env.AWS_ACCESS_KEY_ID,
      secretAccessKey: env.AWS_SECRET_ACCESS_KEY,
      ...(env.AWS_SESSION_TOKEN ? { sessionToken: env.AWS_SESSION_TOKEN } : {}),
    };
  }
  const file = config.credentials_file ?? env.AWS_SHARED_CREDENTIALS_FILE;
  if (!file) {
    throw new CredentialsError(
      "shipping: no credentials — set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or shipping.credentials_file / AWS_SHARED_CREDENTIALS_FILE",
    );
  }
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (error) {
    throw new CredentialsError(`shipping.credentials_file ${file}: cannot read (${errorMessage(error)})`);
  }
  const profile = config.profile ?? env.AWS_PROFILE ?? "default";
  const section = parseIni(text).get(profile);
  const accessKeyId = section?.get("aws_access_key_id");
  const secretAccessKey = section?.get("aws_secret_access_key");
  if (!accessKeyId || !secretAccessKey) {
    throw new CredentialsError(
      `shipping.credentials_file ${file}: profile [${profile}] lacks aws_access_key_id or aws_secret_access_key`,
    );
  }
  const sessionToken = section?.get("aws_session_token");
  return { accessKeyId, secretAccessKey, ...(sessionToken ? { sessionToken } : {}) };
}
