/**
 * Structured JSON logs on stderr, one object per line, secrets redacted by the
 * same redactor the records use.
 */
export type LogLevel = "debug" | "info" | "warn" | "error";
const order: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

export type Logger = {
  debug(message: string, fields?: Record<string, unknown>): void;
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
  child(fields: Record<string, unknown>): Logger;
};

export function createLogger(options: {
  level: LogLevel;
  redact: (line: string) => string;
  write?: (line: string) => void;
  clock?: () => number;
  base?: Record<string, unknown>;
  /** Fields of the moment added to every line (the current trace and span ids when tracing). */
  fields?: () => Record<string, unknown>;
}): Logger {
  const write = options.write ?? ((line: string) => process.stderr.write(`${line}\n`));
  const clock = options.clock ?? Date.now;
  const base = options.base ?? {};
  const emit = (level: LogLevel, message: string, fields: Record<string, unknown> = {}) => {
    if (order[level] < order[options.level]) return;
    write(
      options.redact(
        JSON.stringify({
          time: new Date(clock()).toISOString(),
          level,
          msg: message,
          ...options.fields?.(),
          ...base,
          ...fields,
        }),
      ),
    );
  };
  return {
    debug: (m, f) => emit("debug", m, f),
    info: (m, f) => emit("info", m, f),
    warn: (m, f) => emit("warn", m, f),
    error: (m, f) => emit("error", m, f),
    child: (fields) => createLogger({ ...options, base: { ...base, ...fields } }),
  };
}
