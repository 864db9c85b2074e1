/**
 * `ura-sidecar records …`: reads a data directory's records offline (never a
 * running sidecar's memory), through src/records/read-records.ts.
 *   records list                                   episodes, their exchange counts and costs
 *   records show EPISODE                           one line per exchange (a cancel, its cost)
 *   records show EPISODE --exchange N [--part P]   the exact bytes of one body (P: client
 *                                                  the default, upstream, delivered)
 *   records export EPISODE --inline [--out FILE]   the exchange lines with every image inline
 * The data directory is --data-dir, else URA_DATA_DIR, else ./ura-data (as `serve`).
 */
import { existsSync, writeFileSync } from "node:fs";
import { errorMessage } from "../lib/error-message.ts";
import { describeCosts, type ExchangeCost, sumByCurrency } from "../pricing/exchange-cost.ts";
import type { ExchangeStage } from "../records/exchange-lines.ts";
import { type EpisodeRecordsView, openRecords, type RecordedExchange } from "../records/read-records.ts";
import { recordedCancel } from "../records/upstream-cancel.ts";
import { parseFlags, usageError } from "./command-flags.ts";

export const usage = `usage: ura-sidecar records list [--data-dir DIR]
       ura-sidecar records show EPISODE [--exchange N [--part client|upstream|delivered]] [--data-dir DIR]
       ura-sidecar records export EPISODE --inline [--out FILE] [--data-dir DIR]`;

const parts = ["client", "upstream", "delivered"] as const;
type Part = (typeof parts)[number];

type Output = { write(text: string): Promise<void>; error(text: string): void };

const defaultOutput: Output = {
  write: async (text) => {
    await Bun.write(Bun.stdout, text);
  },
  error: (text) => console.error(text),
};

/** "3", "0003" or "ex_0003" → "ex_0003". */
function exchangeIdOf(value: string): string | undefined {
  const match = /^(?:ex_)?(\d+)$/.exec(value);
  return match ? `ex_${String(Number(match[1])).padStart(4, "0")}` : undefined;
}

/** The exchange's recorded cost (docs/pricing.md); undefined when it was not priced. */
const costOf = (exchange: RecordedExchange): ExchangeCost | undefined =>
  exchange.line("upstream_response")?.cost;

function summaryLine(exchange: RecordedExchange): string {
  const status = exchange.line("status");
  const bytes = (stage: ExchangeStage) => exchange.stage(stage)?.text.length ?? 0;
  const cost = costOf(exchange);
  const cancelled = recordedCancel(exchange.line("upstream_response"));
  return [
    exchange.id,
    status?.status ?? "unfinished",
    `protocol=${exchange.line("client_request")?.protocol ?? "?"}`,
    `images=${exchange.line("upstream_request")?.images?.images ?? 0}`,
    `record_bytes=${exchange.lines.reduce((sum, line) => sum + line.text.length + 1, 0)}`,
    `upstream_line_bytes=${bytes("upstream_request")}`,
    ...(cancelled ? [`cancelled=${cancelled.at}${cancelled.reason ? `/${cancelled.reason}` : ""}`] : []),
    ...(cost ? [`cost=${describeCosts([cost])}`] : []),
  ].join(" ");
}

/** The episode's recorded costs summed per currency, as `cost=…`; nothing when none was priced. */
function episodeCost(episode: EpisodeRecordsView): string[] {
  const sums = sumByCurrency(episode.exchanges.flatMap((exchange) => costOf(exchange) ?? []));
  return sums.length > 0 ? [`cost=${describeCosts(sums)}`] : [];
}

/**
 * A torn last line (a write cut short by kill -9) is skipped by the reader; it is said
 * on stderr so that what is shown is never silently less than what the files hold.
 */
function reportTornTails(episode: EpisodeRecordsView, out: Output): void {
  for (const [file, tail] of Object.entries(episode.tornTails)) {
    out.error(
      `ura-sidecar records: warning: ${episode.id}/${file} ends in a torn line (${tail.length} chars, a write cut short), skipped`,
    );
  }
}

export async function recordsCommand(
  args: string[],
  env: Record<string, string | undefined>,
  out: Output = defaultOutput,
): Promise<number> {
  const fail = usageError("records", usage, (text) => out.error(text));
  const parsed = parseFlags({
    args,
    allowPositionals: true,
    options: {
      "data-dir": { type: "string" },
      exchange: { type: "string" },
      part: { type: "string" },
      inline: { type: "boolean" },
      out: { type: "string" },
    },
  });
  if (parsed instanceof Error) return fail(parsed.message);
  const { values, positionals } = parsed;
  const [verb, episodeId, ...extra] = positionals;
  if (extra.length > 0) return fail(`unexpected arguments: ${extra.join(" ")}`);
  const dataDir = values["data-dir"] ?? (env.URA_DATA_DIR || "./ura-data");
  if (!existsSync(dataDir)) return fail(`no data directory at ${dataDir}`);
  const records = openRecords(dataDir);

  try {
    if (verb === "list") {
      const lines = records.episodeIds().map((id) => {
        const episode = records.readEpisode(id);
        reportTornTails(episode, out);
        return [
          `${id} exchanges=${episode.exchanges.length} state=${episode.state ?? "?"}`,
          ...episodeCost(episode),
        ].join(" ");
      });
      await out.write(lines.map((line) => `${line}\n`).join(""));
      return 0;
    }
    if (verb !== "show" && verb !== "export") return fail(`unknown verb ${JSON.stringify(verb ?? "")}`);
    if (!episodeId) return fail("EPISODE is required");
    const episode = records.readEpisode(episodeId);
    reportTornTails(episode, out);

    if (verb === "export") {
      if (!values.inline) return fail("export writes self-contained lines: give --inline");
      const lines = episode.exchanges
        .flatMap((exchange) => exchange.lines)
        .map((line) => `${records.inlineLine(line)}\n`);
      if (values.out) writeFileSync(values.out, lines.join(""));
      else await out.write(lines.join(""));
      return 0;
    }

    if (values.exchange === undefined) {
      await out.write(episode.exchanges.map((exchange) => `${summaryLine(exchange)}\n`).join(""));
      return 0;
    }
    const id = exchangeIdOf(values.exchange);
    if (!id) return fail(`--exchange ${values.exchange}: expected a number or ex_NNNN`);
    const exchange = episode.exchanges.find((candidate) => candidate.id === id);
    if (!exchange) return fail(`episode ${episodeId} has no exchange ${id}`);
    const part = (values.part ?? "client") as Part;
    if (!parts.includes(part)) return fail(`--part ${values.part}: expected one of ${parts.join(", ")}`);
    const text =
      part === "client"
        ? records.clientRequestText(exchange)
        : part === "upstream"
          ? records.upstreamRequestText(exchange)
          : records.deliveredText(exchange);
    if (text === undefined) return fail(`exchange ${id} has no recorded ${part} body`);
    await out.write(text);
    return 0;
  } catch (error) {
    out.error(`ura-sidecar records: ${errorMessage(error)}`);
    return 1;
  }
}
