import { isIP } from "node:net";
import { status } from "minecraft-server-util";

export interface PingResult {
  online: boolean;
  latencyMs: number | null;
  playersOnline: number | null;
  playersMax: number | null;
  version: string | null;
  motd: string | null;
  /** Why the server counted as down (refused, timed out...). */
  error: string | null;
  /** The players the answer listed (a sample: vanilla lists at most 12), null when it listed none. */
  sample: SampledPlayer[] | null;
}

export interface SampledPlayer {
  uuid: string;
  name: string;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const NIL_UUID = "00000000-0000-0000-0000-000000000000";
const MAX_SAMPLE = 100;

/**
 * Only entries that name a real player: servers that hide their list answer made-up names with
 * the nil UUID, and some put MOTD lines in the sample.
 */
function players(sample: unknown): SampledPlayer[] | null {
  if (!Array.isArray(sample)) return null;
  const out = new Map<string, SampledPlayer>();
  for (const p of sample.slice(0, MAX_SAMPLE)) {
    const uuid = typeof p?.id === "string" ? p.id.toLowerCase() : "";
    const name = typeof p?.name === "string" ? p.name : "";
    if (UUID.test(uuid) && uuid !== NIL_UUID && /^[A-Za-z0-9_.*-]{1,32}$/.test(name)) out.set(uuid, { uuid, name });
  }
  return out.size > 0 ? [...out.values()] : null;
}

const clip = (s: string, n: number) => (s.length > n ? s.slice(0, n) : s);
/** A server reports what it likes; only a sane count reaches an integer column. */
const count = (n: unknown) => (typeof n === "number" && Number.isInteger(n) && n >= 0 && n <= 2_147_483_647 ? n : null);

/**
 * One Server List Ping. Never throws: a server that does not answer within the timeout, or
 * answers nonsense, is down. SRV lookup only for names (an IP literal has no SRV record, and
 * the lookup would spend time on a resolver).
 */
export async function ping(host: string, port: number, timeoutMs: number): Promise<PingResult> {
  try {
    const r = await status(host, port, { timeout: timeoutMs, enableSRV: isIP(host) === 0 && host !== "localhost" });
    return {
      online: true,
      latencyMs: Math.max(0, Math.round(r.roundTripLatency)),
      playersOnline: count(r.players.online),
      playersMax: count(r.players.max),
      version: clip(String(r.version.name ?? ""), 200),
      motd: clip(r.motd.clean, 500),
      error: null,
      sample: players(r.players.sample),
    };
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    return {
      online: false,
      latencyMs: null,
      playersOnline: null,
      playersMax: null,
      version: null,
      motd: null,
      error: clip(message, 200),
      sample: null,
    };
  }
}
