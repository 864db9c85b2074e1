/** The --help text. */
export function helpText(version: string): string {
  return `ura-sidecar ${version} — agent CLIs on one Qwen upstream, robot tools over MCP

Usage:
  ura-sidecar [serve] [flags]       start the sidecar
  ura-sidecar client-config <opencode|gemini|claude|codex> --episode <id | launch.json> --out DIR
                                    write a ready kit (config files, credentials.env, launch script)
                                    for one episode; by id it asks --sidecar URL (default
                                    http://127.0.0.1:8787) with URA_CONTROL_PASSWORD; a file is the
                                    JSON POST /control/episodes returned (not the records' episode.json)
    --new-episode [--context-policy identity|sliding_window|body_budget]
                                    create the episode first, with that context policy
                                    (body_budget for a camera episode, docs/long-sessions.md)
  ura-sidecar validate --client NAME [--binary PATH] --out DIR  |  validate --all --out DIR
                                    run the real CLI on the smoke episode against an in-process
                                    sidecar and scripted upstream; writes validation.json,
                                    exits non-zero on any failed check
    add --upstream [--model NAME]   the same episode against the configured endpoint
                                    (URA_UPSTREAM_URL, URA_UPSTREAM_API_KEY): proves the model too;
                                    its deviations from the script fail, said plainly
  ura-sidecar records list | show EPISODE [--exchange N [--part client|upstream|delivered]]
                    | export EPISODE --inline [--out FILE]        [--data-dir DIR]
                                    read a data directory's records: list episodes, one line per
                                    exchange, the exact bytes of a client/upstream/delivered body,
                                    or the exchange lines with every image inline (docs/records.md)
  ura-sidecar export dataset --out DIR (EPISODE_ID… | --all) [--data-dir DIR] [--client NAME]…
                     [--model NAME]… [--since DATE] [--until DATE] [--include-failed]
                     [--include-interrupted] [--inline-images]
                                    episodes → a validated chat fine-tuning dataset (dataset.jsonl,
                                    images/, manifest.json; docs/dataset.md); by default only
                                    episodes that finished with a submitted finish receipt
  ura-sidecar --version | --help

Serve flags (flags win over environment, which wins over the config file):
  --config FILE          JSON config file (keys as in the config schema, e.g. {"upstream":{"retry":{"max_attempts":3}}})
  --listen HOST:PORT     listen address (default 127.0.0.1:8787; env URA_LISTEN)
  --data-dir DIR         records directory (default ./ura-data; env URA_DATA_DIR)
  --model NAME           upstream model (env URA_MODEL)
  --upstream-url URL     Qwen Chat API root, e.g. https://…/compatible-mode/v1 (env URA_UPSTREAM_URL);
                         unset = the embedded scripted demo model
  --upstream-profile NAME
                         how the embedded scripted model behaves: instant (default) or loaded (slow
                         answers, 429 and 5xx bursts, a shared key quota; docs/upstream-profiles.md)
                         (env URA_UPSTREAM_PROFILE)
  --log-level LEVEL      debug | info | warn | error
  --default-episode      create one episode at start-up and print how to point a CLI at it
  --context-policy NAME  context policy of episodes that choose none: identity (default), sliding_window,
                         body_budget (camera episodes; docs/context-policies.md) (env URA_CONTEXT_POLICY)
  --validate-config      check the configuration offline and exit (non-zero naming each bad key)

Secrets, from the environment only:
  URA_UPSTREAM_API_KEY   upstream credential
  URA_CONTROL_PASSWORD   control API password (generated and printed once when unset)
`;
}
