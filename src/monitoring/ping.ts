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
    };
  }
}
