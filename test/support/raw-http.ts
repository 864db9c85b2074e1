/**
 * HTTP/1.1 over a raw TCP socket (tests only), for what fetch cannot do: send a
 * request target exactly as written (no `../` normalisation), and behave like a
 * client that goes away mid-response (close the socket as soon as the status
 * line arrived, or stop reading after the first bytes), and a connection the test
 * writes to piece by piece (a slow client, a body sent with chunked encoding).
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

/** A connection written to piece by piece; what the sidecar answers is collected as it arrives. */
export type RawConnection = {
  write: (text: string) => void;
  /** Everything received so far. */
  received: () => string;
  /** Resolves with the milliseconds from opening to the sidecar closing the connection. */
  closed: Promise<number>;
  isOpen: () => boolean;
  end: () => void;
};

export async function connectRaw(origin: string): Promise<RawConnection> {
  const { hostname, port } = new URL(origin);
  const opened = Date.now();
  let text = "";
  let open = true;
  const { promise: closed, resolve } = Promise.withResolvers<number>();
  const socket = await Bun.connect({
    hostname,
    port: Number(port),
    socket: {
      data(_socket, data) {
        text += data.toString("latin1");
      },
      close() {
        open = false;
        resolve(Date.now() - opened);
      },
      error() {},
    },
  });
  return {
    write: (chunk) => void socket.write(chunk),
    received: () => text,
    closed,
    isOpen: () => open,
    end: () => socket.end(),
  };
}

/** One chunk of a body sent with `transfer-encoding: chunked` (RFC 9112 §7.1); "" is the last chunk. */
export function chunkOf(text: string): string {
  return `${Buffer.byteLength(text).toString(16)}\r\n${text}\r\n`;
}
