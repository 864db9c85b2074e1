/**
 * HTTP/1.1 over a raw TCP socket (tests only), for what fetch cannot do: send a
 * request target exactly as written (no `../` normalisation), and behave like a
 * client that goes away mid-response (close the socket as soon as the status
 * line arrived, or stop reading after the first bytes).
 */

export type RawRequest = {
  method: string;
  /** The request target, sent verbatim. */
  target: string;
  headers?: Record<string, string>;
  body?: string;
};

export type RawOptions = {
  /** Close the socket as soon as this many response bytes arrived (default: read to the end). */
  closeAfterBytes?: number;
  timeoutMs?: number;
};

export type RawResponse = {
  /** HTTP status from the status line, 0 when none arrived. */
  status: number;
  /** Everything received (head and body, chunked encoding left as is). */
  raw: string;
  /** Whether the client closed the socket before the server finished. */
  closedEarly: boolean;
};

/** Formats a request with Host, Content-Length and `Connection: close`. */
export function formatRawRequest(host: string, request: RawRequest): string {
  const body = request.body ?? "";
  const headers: Record<string, string> = {
    host,
    connection: "close",
    ...(request.body === undefined ? {} : { "content-length": String(Buffer.byteLength(body)) }),
    ...request.headers,
  };
  const head = Object.entries(headers)
    .map(([k, v]) => `${k}: ${v}`)
    .join("\r\n");
  return `${request.method} ${request.target} HTTP/1.1\r\n${head}\r\n\r\n${body}`;
}

export async function sendRaw(
  origin: string,
  request: RawRequest,
  options: RawOptions = {},
): Promise<RawResponse> {
  const url = new URL(origin);
  const text = formatRawRequest(url.host, request);
  const decoder = new TextDecoder();
  let raw = "";
  let received = 0;
  let closedEarly = false;
  const { promise, resolve } = Promise.withResolvers<void>();
  const socket = await Bun.connect({
    hostname: url.hostname,
    port: Number(url.port),
    socket: {
      data(s, data) {
        received += data.byteLength;
        raw += decoder.decode(data, { stream: true });
        if (options.closeAfterBytes !== undefined && received >= options.closeAfterBytes && !closedEarly) {
          closedEarly = true;
          s.terminate();
          resolve();
        }
      },
      close() {
        resolve();
      },
      error() {
        resolve();
      },
    },
  });
  socket.write(text);
  socket.flush();
  const timer = setTimeout(() => {
    socket.terminate();
    resolve();
  }, options.timeoutMs ?? 10_000);
  await promise;
  clearTimeout(timer);
  const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(raw)?.[1] ?? 0);
  return { status, raw, closedEarly };
}
