/**
 * `ura-sidecar export dataset --out DIR [EPISODE…|--all] [filters]`: argument
 * handling for the dataset export (src/dataset/export-dataset.ts). Exit codes:
 * 0 every selected conversation exported; 1 the dataset was written but records
 * of some selected episode were corrupt or a line failed validation (listed in
 * manifest.json `skipped`); 2 usage error or nothing could be written.
 */
import { readSecrets } from "../config/load-config.ts";
import { ExportRefused, exportDataset } from "../dataset/export-dataset.ts";
import { loadCodecs } from "../images/codecs.ts";
import { errorMessage } from "../lib/error-message.ts";
import { parseFlags, usageError } from "./command-flags.ts";

export const usage = `usage: ura-sidecar export dataset --out DIR (EPISODE_ID… | --all) [--data-dir DIR (default ./ura-data)]
       [--client NAME]… [--model NAME]… [--since DATE] [--until DATE]
       [--include-failed] [--include-interrupted] [--inline-images]`;

function parseDate(flag: string, value: string | undefined): Date | undefined {
  if (value === undefined) return undefined;
  const date = new Date(value);
  if (Number.isNaN(date.getTime()))
    throw new Error(`${flag} ${JSON.stringify(value)}: not a date (e.g. 2026-12-01 or 2026-12-01T10:00:00Z)`);
  return date;
}

export async function exportDatasetCommand(
  args: string[],
  version: string,
  env: NodeJS.ProcessEnv,
): Promise<number> {
  const fail = usageError("export dataset", usage);
  const [what, ...rest] = args;
  if (what !== "dataset")
    return fail(`unknown export ${JSON.stringify(what ?? "")}; the one export is "dataset"`);
  const parsed = parseFlags({
    args: rest,
    allowPositionals: true,
    options: {
      out: { type: "string" },
      "data-dir": { type: "string" },
      all: { type: "boolean" },
      client: { type: "string", multiple: true },
      model: { type: "string", multiple: true },
      since: { type: "string" },
      until: { type: "string" },
      "include-failed": { type: "boolean" },
      "include-interrupted": { type: "boolean" },
      "inline-images": { type: "boolean" },
    },
  });
  if (parsed instanceof Error) return fail(parsed.message);
  let since: Date | undefined;
  let until: Date | undefined;
  try {
    since = parseDate("--since", parsed.values.since);
    // A bare date as --until means through the end of that day.
    const untilText = parsed.values.until;
    until = parseDate(
      "--until",
      untilText && /^\d{4}-\d{2}-\d{2}$/.test(untilText) ? `${untilText}T23:59:59.999Z` : untilText,
    );
  } catch (error) {
    return fail(errorMessage(error));
  }
  const { values, positionals } = parsed;
  if (!values.out) return fail("--out DIR is required");
  if (Boolean(values.all) === positionals.length > 0)
    return fail("give episode ids or --all (exactly one of them)");

  const secrets = readSecrets(env);
  try {
    const { manifest, incomplete } = await exportDataset({
      dataDir: values["data-dir"] ?? env.URA_DATA_DIR ?? "ura-data",
      outDir: values.out,
      selection: {
        episodes: values.all ? undefined : positionals,
        clients: values.client,
        models: values.model,
        since,
        until,
        includeFailed: values["include-failed"] ?? false,
        includeInterrupted: values["include-interrupted"] ?? false,
      },
      inlineImages: values["inline-images"] ?? false,
      secrets: [secrets.upstreamApiKey, secrets.controlPassword],
      codecs: await loadCodecs(),
      version,
    });
    const counts = manifest.counts as Record<string, number>;
    const skipped = manifest.skipped as {
      episode: string;
      exchanges?: string[];
      kind: string;
      reason: string;
    }[];
    console.log(
      `export dataset: ${counts.conversations} conversation(s) from ${counts.episodes_exported} episode(s), ${counts.images} image(s) → ${values.out}`,
    );
    for (const s of skipped)
      console.log(
        `  skipped ${s.episode}${s.exchanges ? ` (${s.exchanges.join(",")})` : ""} [${s.kind}]: ${s.reason}`,
      );
    if (incomplete)
      console.error(
        "export dataset: some selected records could not be exported whole (see manifest.json skipped)",
      );
    return incomplete ? 1 : 0;
  } catch (error) {
    if (error instanceof ExportRefused) return fail(error.message);
    throw error;
  }
}
