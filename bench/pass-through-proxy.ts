/** The floor: a minimal pass-through proxy (parse nothing, forward body, stream the answer back). */
const upstream = process.argv[2] ?? "http://127.0.0.1:1/v1";
const server = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  async fetch(req) {
    const url = new URL(req.url);
    const res = await fetch(`${upstream}${url.pathname}`, {
      method: req.method,
      headers: { "content-type": "application/json" },
      body: await req.text(),
    });
    return new Response(res.body, {
      status: res.status,
      headers: { "content-type": res.headers.get("content-type") ?? "application/json" },
    });
  },
});
console.log(`listening: http://127.0.0.1:${server.port}`);
