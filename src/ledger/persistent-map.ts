/**
 * An immutable map whose `set` returns a new map sharing all but one path with the
 * old one (a hash array mapped trie: 32-way nodes, five bits of the key's hash per
 * level, at most seven levels). The ledger keeps every state as a value — the state
 * before a failed journal write stays valid, replay and live build the same values —
 * and copying a whole `Map` per event made an episode's ledger cost grow with the
 * square of its calls; this `set` copies at most seven 32-slot arrays.
 * Keys are strings or integers; nothing is ever removed. Iteration follows the hashes,
 * not insertion order (an integer key's hash is itself, so `get(0..size-1)` is cheap).
 */

/** One entry, the common case: a single small object per key. */
type Leaf<K, V> = { readonly hash: number; readonly key: K; readonly value: V };
/** Keys whose hashes are equal. */
type Collision<K, V> = { readonly hash: number; readonly leaves: readonly Leaf<K, V>[] };
type Branch<K, V> = { readonly bitmap: number; readonly children: readonly TrieNode<K, V>[] };
type TrieNode<K, V> = Leaf<K, V> | Collision<K, V> | Branch<K, V>;

const bitsPerLevel = 5;
const levelMask = 0b11111;

export class PersistentMap<K extends string | number, V> implements ReadonlyMap<K, V> {
  private constructor(
    private readonly root: TrieNode<K, V> | undefined,
    readonly size: number,
  ) {}

  static empty<K extends string | number, V>(): PersistentMap<K, V> {
    return new PersistentMap<K, V>(undefined, 0);
  }

  get(key: K): V | undefined {
    return this.find(key)?.value;
  }

  has(key: K): boolean {
    return this.find(key) !== undefined;
  }

  /** A map with `key` bound to `value`; this one is unchanged. */
  set(key: K, value: V): PersistentMap<K, V> {
    const hash = hashKey(key);
    const added = { value: false };
    const root =
      this.root === undefined
        ? newLeaf(hash, key, value, added)
        : insert(this.root, 0, hash, key, value, added);
    return new PersistentMap(root, this.size + (added.value ? 1 : 0));
  }

  *entries(): MapIterator<[K, V]> {
    if (this.root !== undefined) yield* walk(this.root);
  }

  *keys(): MapIterator<K> {
    for (const [key] of this.entries()) yield key;
  }

  *values(): MapIterator<V> {
    for (const [, value] of this.entries()) yield value;
  }

  [Symbol.iterator](): MapIterator<[K, V]> {
    return this.entries();
  }

  private find(key: K): Leaf<K, V> | undefined {
    const hash = hashKey(key);
    let node = this.root;
    for (let shift = 0; node !== undefined; shift += bitsPerLevel) {
      if (!("bitmap" in node)) {
        if (node.hash !== hash) return undefined;
        return "leaves" in node
          ? node.leaves.find((leaf) => leaf.key === key)
          : node.key === key
            ? node
            : undefined;
      }
      const bit = 1 << ((hash >>> shift) & levelMask);
      if ((node.bitmap & bit) === 0) return undefined;
      node = node.children[slot(node.bitmap, bit)];
    }
    return undefined;
  }

  forEach(callback: (value: V, key: K, map: ReadonlyMap<K, V>) => void): void {
    for (const [key, value] of this.entries()) callback(value, key, this);
  }
}

function insert<K, V>(
  node: TrieNode<K, V>,
  shift: number,
  hash: number,
  key: K,
  value: V,
  added: { value: boolean },
): TrieNode<K, V> {
  if (!("bitmap" in node)) {
    if (node.hash === hash) {
      const leaves = "leaves" in node ? node.leaves : [node];
      const at = leaves.findIndex((leaf) => leaf.key === key);
      if (at < 0) return { hash, leaves: [...leaves, newLeaf(hash, key, value, added)] };
      if (leaves.length === 1) return { hash, key, value };
      return { hash, leaves: leaves.map((leaf, i) => (i === at ? { hash, key, value } : leaf)) };
    }
    // Two hashes share this position: push the bucket one level down and insert beside it.
    const bit = 1 << ((node.hash >>> shift) & levelMask);
    return insert({ bitmap: bit, children: [node] }, shift, hash, key, value, added);
  }
  const bit = 1 << ((hash >>> shift) & levelMask);
  const at = slot(node.bitmap, bit);
  const children = [...node.children];
  const child = children[at];
  if ((node.bitmap & bit) !== 0 && child !== undefined) {
    children[at] = insert(child, shift + bitsPerLevel, hash, key, value, added);
    return { bitmap: node.bitmap, children };
  }
  children.splice(at, 0, newLeaf(hash, key, value, added));
  return { bitmap: node.bitmap | bit, children };
}

function newLeaf<K, V>(hash: number, key: K, value: V, added: { value: boolean }): Leaf<K, V> {
  added.value = true;
  return { hash, key, value };
}

function* walk<K, V>(node: TrieNode<K, V>): Generator<[K, V]> {
  if ("bitmap" in node) for (const child of node.children) yield* walk(child);
  else if ("leaves" in node) for (const leaf of node.leaves) yield [leaf.key, leaf.value];
  else yield [node.key, node.value];
}

/** Index of `bit`'s child among the children present. */
function slot(bitmap: number, bit: number): number {
  let below = bitmap & (bit - 1);
  below -= (below >>> 1) & 0x55555555;
  below = (below & 0x33333333) + ((below >>> 2) & 0x33333333);
  return (((below + (below >>> 4)) & 0x0f0f0f0f) * 0x01010101) >>> 24;
}

/** An integer is its own hash; a string's is FNV-1a over its UTF-16 units. */
function hashKey(key: string | number): number {
  if (typeof key === "number") return key | 0;
  let hash = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) hash = Math.imul(hash ^ key.charCodeAt(i), 0x01000193);
  return hash >>> 0;
}
