/**
 * A bounded map whose entries expire after `ttlMs`, for answers read from the database that
 * other instances can change (they announce each change, and the owner calls `delete`).
 *
 * `epoch` guards the read-then-remember race: a loader takes the epoch before its query and
 * passes it to `set`; an invalidation heard while the query ran moves the epoch on, and the
 * possibly stale answer is not kept. The TTL bounds how long a lost announcement can matter.
 */
export class BoundedCache<K, V> {
  private entries = new Map<K, { value: V; until: number }>();
  private generation = 0;

  constructor(
    private readonly maxEntries: number,
    private readonly ttlMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  get epoch() {
    return this.generation;
  }

  get size() {
    return this.entries.size;
  }

  get(key: K): V | undefined {
    const e = this.entries.get(key);
    if (!e) return undefined;
    if (e.until <= this.now()) {
      this.entries.delete(key);
      return undefined;
    }
    return e.value;
  }

  /** Remembers `value` unless something was invalidated since `epoch` was read. */
  set(key: K, value: V, epoch: number) {
    if (epoch !== this.generation || this.ttlMs <= 0) return;
    this.entries.delete(key);
    // The oldest entry goes first; a forgotten one is simply read again.
    if (this.entries.size >= this.maxEntries) this.entries.delete(this.entries.keys().next().value as K);
    this.entries.set(key, { value, until: this.now() + this.ttlMs });
  }

  delete(key: K) {
    this.generation++;
    this.entries.delete(key);
  }

  deleteWhere(match: (value: V, key: K) => boolean) {
    this.generation++;
    for (const [k, e] of this.entries) if (match(e.value, k)) this.entries.delete(k);
  }
}
