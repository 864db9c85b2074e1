/**
 * The timeline pages, server-rendered with hono's JSX: no client build step, no
 * external assets, one small inline style sheet and inline scripts (live reload
 * while an episode runs, unless an operator is typing a rejection reason; the
 * waiting time of pending approvals), so the page works air-gapped. Calls awaiting
 * an operator's approval come first on their episode's page, each with the latest
 * images the model saw and an Approve and a Reject form (docs/approvals.md).
 */
import type { Child, FC } from "hono/jsx";
import type { PendingApprovalView } from "../control/approvals.ts";
import { clientIdentityStatusSchema } from "../episodes/episode-status.ts";
import { episodeCostSchema } from "../pricing/exchange-cost.ts";
import { describeCancel } from "../records/upstream-cancel.ts";
import type { FoundImage } from "./find-images.ts";
import type { Line, Timeline, TimelineExchange } from "./read-timeline.ts";

const style = `
body{font:14px/1.4 system-ui,sans-serif;margin:0;background:#f6f7f9;color:#1d2330}
header{background:#1d2330;color:#fff;padding:.6rem 1rem}header a{color:#fff}
main{padding:1rem;max-width:1200px;margin:auto}
table{border-collapse:collapse;width:100%;background:#fff}td,th{border:1px solid #dde;padding:.3rem .5rem;text-align:left;vertical-align:top}
.exchange{background:#fff;border:1px solid #dde;border-radius:6px;margin:0 0 1rem;padding:.6rem 1rem}
.exchange h2{font-size:1rem;margin:.2rem 0}.state{font-weight:600}
.failed,.refused,.revoked,.rejected,.rate_limited{color:#b00020}.delivered,.finished,.receipt,.approved{color:#08660d}
.awaiting_approval{color:#8a5a00}
.approvals{border:2px solid #d89b00;background:#fffaf0}.approval{border-top:1px solid #eed;padding:.5rem 0}
.approval form{display:inline-block;margin:.3rem 1rem .3rem 0}.approval input[name=reason]{width:22rem}
.approval button{font-weight:600;padding:.3rem .8rem}.approve{background:#08660d;color:#fff}.reject{background:#b00020;color:#fff}
.images{display:flex;gap:1rem;flex-wrap:wrap}.images figure{margin:0;border:1px solid #dde;padding:.3rem}
.images img{max-width:240px;max-height:180px;display:block;image-rendering:pixelated}
pre{white-space:pre-wrap;word-break:break-all;background:#f0f1f4;padding:.4rem;margin:.2rem 0}
.note{background:#fff6d6;padding:.2rem .4rem}nav.pages a{margin-right:1rem}
`;

export const Layout: FC<{ title: string; children?: Child; liveStamp?: { url: string; stamp: number } }> = ({
  title,
  children,
  liveStamp,
}) => (
  <html lang="en">
    <head>
      <meta charset="utf-8" />
      <title>{title}</title>
      <style>{style}</style>
    </head>
    <body>
      <header>
        <a href="/ui">ura-sidecar</a> · {title}
      </header>
      <main>{children}</main>
      {liveStamp ? (
        <script
          // Polls the records' size; reloads when something was appended, unless a rejection reason is being written.
          dangerouslySetInnerHTML={{
            __html: `setInterval(async()=>{try{if([...document.querySelectorAll("input[name=reason]")].some(i=>i.value||i===document.activeElement))return;const r=await fetch(${JSON.stringify(liveStamp.url)});const j=await r.json();if(j.stamp!==${liveStamp.stamp})location.reload()}catch{}},1500)`,
          }}
        />
      ) : null}
    </body>
  </html>
);

export const LoginPage: FC<{ failed: boolean }> = ({ failed }) => (
  <Layout title="sign in">
    <form method="post" action="/ui/login">
      <p>The control password of this sidecar (URA_CONTROL_PASSWORD).</p>
      {failed ? <p class="failed">Wrong password.</p> : null}
      <input type="password" name="password" autocomplete="current-password" autofocus />
      <button type="submit">Sign in</button>
    </form>
  </Layout>
);

export type EpisodeRow = {
  id: string;
  state: string;
  client: string;
  model: string;
  turns: number;
  toolCalls: number;
  failures: number;
  /** Calls waiting for an operator's decision on the episode's page. */
  awaitingApproval: number;
  /** The episode's cost so far with its currency (docs/pricing.md); empty when none was priced. */
  cost: string;
  createdAt: string;
};

const Pages: FC<{ page: number; pages: number; base: string }> = ({ page, pages, base }) =>
  pages > 1 ? (
    <nav class="pages">
      {page > 1 ? <a href={`${base}page=${page - 1}`}>← newer</a> : null}
      <span>
        page {page} of {pages}
      </span>
      {page < pages ? <a href={`${base}page=${page + 1}`}>older →</a> : null}
    </nav>
  ) : null;

export const EpisodeListPage: FC<{ rows: EpisodeRow[]; page: number; pages: number; total: number }> = ({
  rows,
  page,
  pages,
  total,
}) => (
  <Layout title={`episodes (${total})`}>
    <table id="episodes">
      <thead>
        <tr>
          <th>episode</th>
          <th>state</th>
          <th>client</th>
          <th>model</th>
          <th>turns</th>
          <th>tool calls</th>
          <th>failures</th>
          <th>cost</th>
          <th>started</th>
        </tr>
      </thead>
      <tbody>
        {rows.map((r) => (
          <tr data-episode={r.id}>
            <td>
              <a href={`/ui/episodes/${r.id}`}>{r.id}</a>
            </td>
            <td class={`state ${r.state}`}>
              {r.state}
              {r.awaitingApproval > 0 ? (
                <a class="awaiting_approval" href={`/ui/episodes/${r.id}#approvals`}>
                  {" "}
                  · {r.awaitingApproval} awaiting approval
                </a>
              ) : null}
            </td>
            <td>{r.client}</td>
            <td>{r.model}</td>
            <td>{r.turns}</td>
            <td>{r.toolCalls}</td>
            <td>{r.failures}</td>
            <td class="cost">{r.cost}</td>
            <td>{r.createdAt}</td>
          </tr>
        ))}
      </tbody>
    </table>
    <Pages page={page} pages={pages} base="/ui?" />
  </Layout>
);

const sizeOf = (bytes: number) => (bytes >= 1024 ? `${(bytes / 1024).toFixed(1)} KiB` : `${bytes} B`);

const Images: FC<{
  episode: string;
  exchange: string;
  side: "client" | "upstream";
  images: FoundImage[];
}> = ({ episode, exchange, side, images }) => (
  <>
    {images.map((image, i) => (
      <figure data-side={side}>
        <img
          loading="lazy"
          src={
            image.kind === "blob"
              ? `/ui/blobs/${image.digest}`
              : `/ui/episodes/${episode}/exchanges/${exchange}/images/${side}/${i}`
          }
          alt={side === "client" ? `the client PNG ${i + 1}` : `sent upstream ${i + 1}`}
        />
        <figcaption>
          {side === "client" ? "client" : "sent upstream"} {image.mediaType} · {sizeOf(image.bytes)}
        </figcaption>
      </figure>
    ))}
  </>
);

const Json: FC<{ value: unknown }> = ({ value }) => <pre>{JSON.stringify(value, null, 1)}</pre>;

const transition = (e: Line) => {
  const extra =
    e.type === "refused"
      ? ` ${e.code}: ${e.reason}`
      : e.type === "stop_answered"
        ? ` (${e.reason}): HTTP ${e.status ?? "none"}, ${e.stopped ? "stopped" : "not stopped"}${e.detail ? ` — ${e.detail}` : ""}`
        : e.reason
          ? `: ${e.reason}`
          : "";
  const job = e.jobId ? ` job ${e.jobId}` : "";
  const by = e.type === "approved" || e.type === "rejected" ? ` by ${String(e.by)}` : "";
  return `${new Date(Number(e.at)).toISOString().slice(11, 23)} ${e.type}${by}${job}${extra}`;
};

/** One of the episode's latest images, by the URL the page serves it at. */
export type LatestImage = { src: string; mediaType: string; bytes: number };

const waited = (ms: number) => `${Math.floor(ms / 1000)} s`;

/** The calls awaiting a decision, each with Approve and Reject (a reason required), posted back to /ui. */
const Approvals: FC<{ episode: string; approvals: PendingApprovalView[]; images: LatestImage[] }> = ({
  episode,
  approvals,
  images,
}) => (
  <section class="exchange approvals" id="approvals">
    <h2>
      <span class="awaiting_approval">{approvals.length} call(s) awaiting your approval</span>
    </h2>
    {images.length > 0 ? (
      <div class="images latest">
        {images.map((image, i) => (
          <figure data-side="latest">
            <img src={image.src} alt={`what the model saw last (${i + 1})`} />
            <figcaption>
              latest {image.mediaType} · {sizeOf(image.bytes)}
            </figcaption>
          </figure>
        ))}
      </div>
    ) : null}
    {approvals.map((a) => (
      <div class="approval" data-approval={a.call_id}>
        <p>
          <strong>{a.tool}</strong> ({a.model_name}) {a.call_id} · waiting{" "}
          <span class="waited" data-requested-at={Date.parse(a.requested_at)}>
            {waited(a.waited_ms)}
          </span>{" "}
          · rejected unless decided by {a.expires_at.slice(11, 19)} UTC · rule: {a.rule}
        </p>
        <pre class="arguments">{JSON.stringify(a.arguments, null, 1)}</pre>
        <p class="digest">
          arguments SHA-256 <code>{a.args_sha256}</code>
        </p>
        <form method="post" action={`/ui/episodes/${episode}/approvals/${encodeURIComponent(a.call_id)}`}>
          <input type="hidden" name="decision" value="approve" />
          <input type="hidden" name="args_sha256" value={a.args_sha256} />
          <button type="submit" class="approve">
            Approve
          </button>
        </form>
        <form method="post" action={`/ui/episodes/${episode}/approvals/${encodeURIComponent(a.call_id)}`}>
          <input type="hidden" name="decision" value="reject" />
          <input type="hidden" name="args_sha256" value={a.args_sha256} />
          <input name="reason" required placeholder="reason (the model is told)" maxlength={1000} />
          <button type="submit" class="reject">
            Reject
          </button>
        </form>
      </div>
    ))}
    <script
      // Counts the waiting time up between reloads.
      dangerouslySetInnerHTML={{
        __html: `setInterval(()=>{for(const e of document.querySelectorAll(".waited[data-requested-at]"))e.textContent=Math.max(0,Math.floor((Date.now()-Number(e.dataset.requestedAt))/1000))+" s"},1000)`,
      }}
    />
  </section>
);

/** The upstream's token usage, with what the provider's prompt cache served and wrote (docs/prompt-cache.md). */
const Usage: FC<{ usage: Line }> = ({ usage }) => {
  const count = (value: unknown) => (typeof value === "number" ? value : 0);
  const input = count(usage.inputTokens);
  const cached = count(usage.cachedInputTokens);
  const written = count(usage.cacheCreationInputTokens);
  return (
    <p class="usage">
      tokens: {input} in ({cached} cached{input > 0 ? `, ${Math.round((100 * cached) / input)}%` : ""}
      {written > 0 ? `; ${written} written to the cache` : ""}), {count(usage.outputTokens)} out
    </p>
  );
};

/** What an exchange cost by the operator's price table, per rate (docs/pricing.md). */
const ExchangeCostLine: FC<{ cost: NonNullable<TimelineExchange["cost"]> }> = ({ cost }) => (
  <p class="cost">
    cost: {String(cost.total)} {String(cost.currency)} (input {String(cost.input)} · cache hit{" "}
    {String(cost.cache_hit)}, {String(cost.cache)} · cache creation {String(cost.cache_creation)} · output{" "}
    {String(cost.output)}
    {cost.billed_attempts !== 1 ? `; ${cost.billed_attempts} billed attempts` : ""}
    {cost.tier_above_input_tokens !== undefined
      ? `; the tier of prompts over ${cost.tier_above_input_tokens} tokens`
      : ""}
    )
  </p>
);

/** The episode's cost so far (its status `cost`), when its exchanges were priced. */
const EpisodeCostLine: FC<{ cost: unknown }> = ({ cost }) => {
  const parsed = episodeCostSchema.safeParse(cost);
  if (!parsed.success) return null;
  const { total, currency, exchanges, tokens } = parsed.data;
  return (
    <p class="cost" id="episode-cost">
      cost: {total} {currency} over {exchanges} priced {exchanges === 1 ? "exchange" : "exchanges"} (tokens:{" "}
      {tokens.input} input, {tokens.cache_hit} cache hit, {tokens.cache_creation} cache creation,{" "}
      {tokens.output} output)
    </p>
  );
};

const Exchange: FC<{ episode: string; exchange: TimelineExchange }> = ({ episode, exchange: x }) => {
  const status = String(x.status?.status ?? "in flight");
  const omitted = (x.decision?.images_omitted as { toolCallId: string; index: number }[] | undefined) ?? [];
  const removed = (x.decision?.blocks_removed as { toolCallIds: string[] }[] | undefined) ?? [];
  const window = x.decision?.window;
  return (
    <section class="exchange" id={x.id} data-exchange={x.id}>
      <h2>
        {x.id} · {x.protocol} · <span class={status}>{status}</span>
      </h2>
      <div class="stages">
        {x.stages.map((s) => (
          <span>
            {s.stage}
            {s.ms !== undefined ? ` +${s.ms} ms` : ""} ·{" "}
          </span>
        ))}
      </div>
      {x.decision ? (
        <p class="decision">
          context: {String(x.decision.policy)}, estimate {String(x.decision.estimate_before)} →{" "}
          {String(x.decision.estimate_after)} tokens{x.decision.reduced ? ", reduced" : ""}
        </p>
      ) : null}
      {window?.engaged ? (
        <p class="note window">
          the model's window: prompt ~{window.prompt_tokens_before} → ~{window.prompt_tokens_after} tokens
          (over {window.limit_tokens} of max_input_tokens {window.max_input_tokens}), reduced by the sidecar
        </p>
      ) : null}
      {omitted.map((o) => (
        <p class="note omitted">
          image {o.index} of the result of {o.toolCallId} omitted by the context policy
        </p>
      ))}
      {removed.map((r) => (
        <p class="note removed">blocks of {r.toolCallIds.join(", ")} removed by the context policy</p>
      ))}
      {x.clientImages.length + x.upstreamImages.length > 0 ? (
        <div class="images">
          <Images episode={episode} exchange={x.id} side="client" images={x.clientImages} />
          <Images episode={episode} exchange={x.id} side="upstream" images={x.upstreamImages} />
        </div>
      ) : null}
      {x.usage ? <Usage usage={x.usage} /> : null}
      {x.cost ? <ExchangeCostLine cost={x.cost} /> : null}
      {x.upstream.queueMs > 0 || x.upstream.retries > 0 ? (
        <p class="upstream-waits">
          upstream: waited {x.upstream.queueMs} ms in the shared queue · {x.upstream.throttled} throttled ·{" "}
          {x.upstream.retries} {x.upstream.retries === 1 ? "retry" : "retries"}
        </p>
      ) : null}
      {x.attempts.length > 1 || x.attempts.some((a) => a.error) ? (
        <div class="attempts">
          {x.attempts.map((a) => (
            <p>
              upstream attempt {String(a.attempt)}: {a.queue_ms ? `queued ${String(a.queue_ms)} ms, ` : ""}
              HTTP {String(a.status ?? "none")} in {String(a.ms)} ms
              {a.ended ? `, ${String(a.ended)}` : ""}
              {a.error ? ` — ${String(a.error)}` : ""}
              {a.retry_in_ms !== undefined ? `, retry in ${String(a.retry_in_ms)} ms` : ""}
            </p>
          ))}
        </div>
      ) : null}
      {x.cancelled ? <p class="note cancelled">{describeCancel(x.cancelled)}</p> : null}
      {x.status?.error ? (
        <div class="error failed">
          <Json value={x.status.error} />
        </div>
      ) : null}
      {x.calls.map((call) => (
        <div class="call" data-call={call.id}>
          <strong>{call.tool}</strong> ({call.modelName}) {call.id} <code>{JSON.stringify(call.args)}</code>
          <ul>
            {call.events.map((e) => (
              <li class={String(e.type)}>
                {transition(e)}
                {e.type === "receipt" ? <pre class="receipt">{JSON.stringify(e.result)}</pre> : null}
              </li>
            ))}
          </ul>
        </div>
      ))}
    </section>
  );
};

/**
 * The client's own session ids (X-Claude-Code-Session-Id, Codex's thread-id, OpenCode's
 * x-session-id), so an episode can be matched to the client's own logs.
 */
const ClientSession: FC<{ identity: unknown }> = ({ identity }) => {
  const parsed = clientIdentityStatusSchema
    .pick({ session_ids: true, session_header: true })
    .safeParse(identity);
  const { session_ids: ids = [], session_header: header } = parsed.success ? parsed.data : {};
  return (
    <p id="client-session">
      {ids.length === 0 ? (
        "the client sent no session id of its own"
      ) : (
        <>
          client session{" "}
          {ids.map((id) => (
            <code>{id}</code>
          ))}{" "}
          ({String(header)})
        </>
      )}
    </p>
  );
};

export const TimelinePage: FC<{
  episode: Line;
  timeline: Timeline;
  page: number;
  pages: number;
  exchanges: TimelineExchange[];
  approvals?: PendingApprovalView[];
  latestImages?: LatestImage[];
  /** Why the last decision posted from this page changed nothing. */
  approvalError?: string;
}> = ({ episode, timeline, page, pages, exchanges, approvals = [], latestImages = [], approvalError }) => {
  const id = String(episode.id);
  return (
    <Layout
      title={`episode ${id}`}
      liveStamp={
        episode.state === "running" ? { url: `/ui/episodes/${id}/stamp`, stamp: timeline.stamp } : undefined
      }
    >
      <p>
        <span class={`state ${String(episode.state)}`} id="episode-state">
          {String(episode.state)}
        </span>{" "}
        · client {String(episode.client ?? "unknown")} · model {String(episode.model)} · started{" "}
        {String(episode.created_at)}
      </p>
      <ClientSession identity={episode.client_identity} />
      {approvalError ? <p class="note failed approval-error">{approvalError}</p> : null}
      {approvals.length > 0 ? <Approvals episode={id} approvals={approvals} images={latestImages} /> : null}
      {episode.failure ? <Json value={episode.failure} /> : null}
      {episode.result ? (
        <p>
          result: <code>{JSON.stringify(episode.result)}</code>
        </p>
      ) : null}
      <EpisodeCostLine cost={episode.cost} />
      <table class="counters">
        <tbody>
          {Object.entries((episode.counters as Record<string, number>) ?? {}).map(([k, v]) => (
            <tr>
              <th>{k}</th>
              <td>{v}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {timeline.refusals.length > 0 ? (
        <section class="exchange refusals">
          <h2>refused callbacks</h2>
          <ul>
            {timeline.refusals.map((r) => (
              <li class="refused">
                {transition(r)} — tool {String(r.tool)} {r.callId ? `call ${String(r.callId)}` : ""}
              </li>
            ))}
          </ul>
        </section>
      ) : null}
      {timeline.otherLedger.map((e) => (
        <p class="note">{transition(e)}</p>
      ))}
      {timeline.auxiliary.map((a) => (
        <p class="note auxiliary">
          local answer {String(a.operation ?? "")} {String(a.path)} → HTTP {String(a.status)}
        </p>
      ))}
      <Pages page={page} pages={pages} base={`/ui/episodes/${id}?`} />
      {exchanges.map((x) => (
        <Exchange episode={id} exchange={x} />
      ))}
      <Pages page={page} pages={pages} base={`/ui/episodes/${id}?`} />
    </Layout>
  );
};
