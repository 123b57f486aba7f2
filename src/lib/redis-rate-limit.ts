import type { Logger } from "./log";
import { MemoryRateLimitStore, type RateLimitStore, type SlidingWindow, type WindowCounts } from "./rate-limit";

/**
 * One hit, atomically (a script runs alone on the server): the stored counts aged to the newer
 * of the stored and the given slot (another instance's clock may be ahead), `admits` applied
 * (src/lib/rate-limit.ts; the same rule the database store states in SQL), the hit counted when
 * admitted, and the key kept for two windows after its last hit (no prune pass needed).
 * Stored as one string: "slotMs,count1,...,countN".
 * Returns { allowed (1/0), slotMs, counts... }.
 */
const HIT_SCRIPT = `
local size = tonumber(ARGV[1])
local slot = tonumber(ARGV[2])
local width = tonumber(ARGV[3])
local limit = tonumber(ARGV[4])
local slack = tonumber(ARGV[5])
local counts = {}
local newest = slot
local stored = redis.call('GET', KEYS[1])
local vals = {}
if stored then
  for n in string.gmatch(stored, '[^,]+') do vals[#vals + 1] = tonumber(n) end
end
if #vals == size + 1 then
  if vals[1] > newest then newest = vals[1] end
  local shift = math.floor((newest - vals[1]) / width + 0.5)
  for i = 1, size do
    local from = i + shift
    if from <= size then counts[i] = vals[from + 1] else counts[i] = 0 end
  end
else
  for i = 1, size do counts[i] = 0 end
end
local total = 0
for i = 1, size do total = total + counts[i] end
local ok = (total - counts[1] < limit) and (total < limit + slack)
if ok then counts[size] = counts[size] + 1 end
redis.call('SET', KEYS[1], string.format('%d', newest) .. ',' .. table.concat(counts, ','), 'PX', ARGV[6])
local out = { ok and 1 or 0, newest }
for i = 1, size do out[i + 2] = counts[i] end
return out
`;

/** The part of a Redis client the store needs (Bun's built-in `RedisClient` has it). */
export interface RedisCommands {
  send(command: string, args: string[]): Promise<unknown>;
}

/**
 * Counters in Redis: every instance pointed at the same Redis counts together, exactly, in one
 * round trip a hit (EVALSHA of the script above; the script is sent once per connection at most).
 */
export class RedisRateLimitStore implements RateLimitStore {
  private sha: string | undefined;

  constructor(
    private readonly redis: RedisCommands,
    /** Namespaces the keys, so one Redis can serve several deployments (or test runs). */
    private readonly prefix = "mcp:rl:",
  ) {}

  async hit(key: string, w: SlidingWindow): Promise<WindowCounts> {
    const args = [
      "1",
      this.prefix + key,
      String(w.size),
      String(w.slotMs),
      String(w.slotWidthMs),
      String(w.limit),
      String(w.slack),
      // Two windows: a key idle that long holds only aged-out counts.
      String(2 * w.size * w.slotWidthMs),
    ];
    let reply: unknown;
    if (this.sha) {
      try {
        reply = await this.redis.send("EVALSHA", [this.sha, ...args]);
      } catch (err) {
        // A restarted or flushed Redis has forgotten the script: load it again below.
        if (!String((err as Error)?.message ?? err).includes("NOSCRIPT")) throw err;
        this.sha = undefined;
      }
    }
    if (!this.sha) {
      this.sha = (await this.redis.send("SCRIPT", ["LOAD", HIT_SCRIPT])) as string;
      reply = await this.redis.send("EVALSHA", [this.sha, ...args]);
    }
    const r = reply as number[];
    return { allowed: Number(r[0]) === 1, slotMs: Number(r[1]), counts: r.slice(2).map(Number) };
  }

  /** Keys expire by themselves two windows after their last hit. */
  async prune(_olderThanMs: number) {}
}

/**
 * Redis down or unreachable: each instance counts on its own in memory until Redis answers
 * again (fail open to per-instance limits, not to no limits). Refusing every limited request
 * instead would turn a Redis outage into a login outage for every launcher, while the limits
 * are abuse guards and each instance still enforces them on what it sees. One log line per
 * `logEveryMs` while it lasts, and one when Redis is back.
 */
export class FallbackRateLimitStore implements RateLimitStore {
  private readonly local = new MemoryRateLimitStore();
  private failingSince: number | undefined;
  private lastLog = 0;

  constructor(
    private readonly primary: RateLimitStore,
    private readonly log: Logger,
    private readonly logEveryMs = 10_000,
    private readonly now: () => number = Date.now,
  ) {}

  /** True while the shared counters are unreachable and hits are counted here. */
  get degraded() {
    return this.failingSince !== undefined;
  }

  async hit(key: string, w: SlidingWindow): Promise<WindowCounts> {
    try {
      const counted = await this.primary.hit(key, w);
      if (this.failingSince !== undefined) {
        this.log.info("rate-limit store reachable again; counting shared", {
          degraded_ms: this.now() - this.failingSince,
        });
        this.failingSince = undefined;
      }
      return counted;
    } catch (err) {
      const t = this.now();
      this.failingSince ??= t;
      if (t - this.lastLog >= this.logEveryMs) {
        this.lastLog = t;
        this.log.error("rate-limit store unreachable; counting per instance in memory", { err });
      }
      return this.local.hit(key, w);
    }
  }

  async prune(olderThanMs: number) {
    await this.local.prune(olderThanMs);
    await this.primary.prune(olderThanMs).catch(() => undefined);
  }
}

/**
 * Bun's built-in client, kept connected: commands fail at once while the connection is down
 * (no offline queue, so a request never waits on Redis), and a failed command starts at most
 * one reconnect attempt a second in the background.
 */
export class ReconnectingRedis implements RedisCommands {
  private readonly client: Bun.RedisClient;
  private reconnecting: Promise<void> | undefined;
  private lastAttempt = 0;
  private closed = false;

  constructor(
    url: string,
    private readonly retryMs = 1000,
  ) {
    this.client = new Bun.RedisClient(url, {
      connectionTimeout: 2000,
      enableOfflineQueue: false,
      enableAutoPipelining: true,
      maxRetries: 3,
    });
  }

  /** The first connection; false (not an error) when Redis is not reachable yet. */
  async connect(): Promise<boolean> {
    return this.client.connect().then(
      () => true,
      () => false,
    );
  }

  send(command: string, args: string[]): Promise<unknown> {
    if (!this.client.connected) this.reconnect();
    return this.client.send(command, args);
  }

  private reconnect() {
    const now = Date.now();
    if (this.closed || this.reconnecting || now - this.lastAttempt < this.retryMs) return;
    this.lastAttempt = now;
    this.reconnecting = this.client
      .connect()
      .catch(() => undefined)
      .finally(() => (this.reconnecting = undefined));
  }

  close() {
    this.closed = true;
    this.client.close();
  }
}
