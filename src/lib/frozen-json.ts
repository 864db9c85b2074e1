/**
 * Work done once for values that cannot change. A client resends the same large
 * members every turn (Claude Code's 63 KB tool list); once such a member is parsed
 * it is deep-frozen, and each later stage (validation, translation, measuring,
 * serialising) keeps what it derived from it by object identity. Freezing is what
 * makes identity a safe key: a frozen value's JSON is the same on every call, and
 * code that tried to change one would throw instead of leaving a stale result.
 */

/** Freezes `value` and everything reachable from it; returns it. */
export function deepFreeze<T>(value: T): T {
  if (value === null || typeof value !== "object" || Object.isFrozen(value)) return value;
  Object.freeze(value);
  for (const member of Object.values(value)) deepFreeze(member);
  return value;
}

function isFrozenObject(value: unknown): value is object {
  return value !== null && typeof value === "object" && Object.isFrozen(value);
}

const jsonOfFrozen = new WeakMap<object, string>();

/** JSON.stringify(value), computed once per frozen object. */
export function stringifyOnce(value: unknown): string {
  if (!isFrozenObject(value)) return JSON.stringify(value);
  let json = jsonOfFrozen.get(value);
  if (json === undefined) {
    json = JSON.stringify(value);
    jsonOfFrozen.set(value, json);
  }
  return json;
}

/**
 * The same text as JSON.stringify(object) for a plain data object, with each
 * frozen member's JSON reused: an object's JSON is `{`, its members
 * `"key":value` in key order joined by commas (members whose value has no JSON
 * skipped), `}`.
 */
export function stringifyReusingMembers(object: Record<string, unknown>): string {
  const members: string[] = [];
  for (const key of Object.keys(object)) {
    const value = object[key];
    const json = isFrozenObject(value) ? stringifyOnce(value) : JSON.stringify(value);
    if (json !== undefined) members.push(`${JSON.stringify(key)}:${json}`);
  }
  return `{${members.join(",")}}`;
}

/**
 * `derive` remembered per frozen argument (its result deep-frozen, so it can key
 * the next stage's memo); any other argument is derived afresh.
 */
export function deriveOncePerFrozen<A extends object, R extends object>(
  derive: (argument: A) => R,
): (argument: A) => R {
  const derived = new WeakMap<A, R>();
  return (argument) => {
    if (!Object.isFrozen(argument)) return derive(argument);
    let result = derived.get(argument);
    if (result === undefined) {
      result = deepFreeze(derive(argument));
      derived.set(argument, result);
    }
    return result;
  };
}
