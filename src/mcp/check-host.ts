/**
 * DNS-rebinding guard for the MCP endpoint: the Host header (and Origin, when a
 * browser sends one) must name this machine — a loopback name or the configured
 * listen host. When listening on a wildcard address, any IP literal is accepted
 * too (a rebinding attack needs a DNS name). Returns why a request is refused.
 */
const loopback = ["127.0.0.1", "localhost", "::1"];
const wildcard = ["0.0.0.0", "::", ""];

function hostnameOf(authority: string): string | undefined {
  try {
    return new URL(`http://${authority}`).hostname.replace(/^\[|\]$/g, "").toLowerCase();
  } catch {
    return undefined;
  }
}

function isIpLiteral(hostname: string): boolean {
  return /^\d{1,3}(\.\d{1,3}){3}$/.test(hostname) || hostname.includes(":");
}

export function allowedHostname(hostname: string, listenHost: string): boolean {
  const listen = listenHost.replace(/^\[|\]$/g, "").toLowerCase();
  if (loopback.includes(hostname) || hostname === listen) return true;
  return wildcard.includes(listen) && isIpLiteral(hostname);
}

export function checkHostAndOrigin(headers: Headers, listenHost: string): string | undefined {
  const host = headers.get("host");
  const hostname = host === null ? undefined : hostnameOf(host);
  if (hostname === undefined || !allowedHostname(hostname, listenHost)) {
    return `Host header ${JSON.stringify(host)} does not name this sidecar (DNS rebinding protection)`;
  }
  const origin = headers.get("origin");
  if (origin !== null) {
    let originHost: string | undefined;
    try {
      originHost = new URL(origin).hostname.replace(/^\[|\]$/g, "").toLowerCase();
    } catch {
      originHost = undefined;
    }
    if (originHost === undefined || !allowedHostname(originHost, listenHost)) {
      return `Origin ${JSON.stringify(origin)} is not allowed (DNS rebinding protection)`;
    }
  }
  return undefined;
}
