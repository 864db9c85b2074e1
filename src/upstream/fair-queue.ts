/**
 * The order in which waiting upstream requests get their turn: episodes in
 * turn (round robin over the episodes that have a request waiting), and within
 * an episode its oldest request first. An episode that gets a turn goes to the
 * back of the ring if it still has requests waiting; an episode that starts
 * waiting joins at the back. So nobody overtakes an episode already waiting:
 * its head request is served after at most (episodes waiting ahead of it)
 * other admissions, which is what makes the shared budget starvation-free.
 *
 * Pure data structure; the budget (upstream-budget.ts) decides when to serve.
 */

export interface FairQueue<T> {
  push(episode: string, item: T): void;
  /** The request whose turn it is, without taking it. */
  peek(): T | undefined;
  /** Takes the request whose turn it is; its episode moves to the back of the ring. */
  shift(): T | undefined;
  /** Takes a request out wherever it is (an aborted wait); false if it is not waiting. */
  remove(episode: string, item: T): boolean;
  readonly size: number;
}

export function createFairQueue<T>(): FairQueue<T> {
  // Map insertion order is the ring: the first key's turn is next.
  const ring = new Map<string, T[]>();
  let size = 0;

  return {
    push(episode, item) {
      const waiting = ring.get(episode);
      if (waiting) waiting.push(item);
      else ring.set(episode, [item]);
      size += 1;
    },
    peek() {
      const first = ring.values().next();
      return first.done ? undefined : first.value[0];
    },
    shift() {
      const first = ring.entries().next();
      if (first.done) return undefined;
      const [episode, waiting] = first.value;
      const item = waiting.shift();
      ring.delete(episode);
      if (waiting.length > 0) ring.set(episode, waiting);
      size -= 1;
      return item;
    },
    remove(episode, item) {
      const waiting = ring.get(episode);
      const index = waiting?.indexOf(item) ?? -1;
      if (!waiting || index < 0) return false;
      waiting.splice(index, 1);
      if (waiting.length === 0) ring.delete(episode);
      size -= 1;
      return true;
    },
    get size() {
      return size;
    },
  };
}
