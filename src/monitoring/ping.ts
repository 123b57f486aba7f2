import { Resolver } from "node:dns/promises";
import { clean, format, parse } from "minecraft-motd-util";
import { literalAddress, type OutboundPolicy, OutboundRefused, resolveAllowed } from "../lib/address-guard";
import { type DownReason, downReason } from "./down-reason";
import { PingError, serverListPing } from "./slp";

export interface PingResult {
  online: boolean;
  latencyMs: number | null;
  playersOnline: number | null;
  playersMax: number | null;
  version: string | null;
  motd: string | null;
  /** The MOTD with its `§` formatting codes, as the server sent it (status pages show its colours). */
  motdRaw: string | null;
  /** Why the server counted as down, as the error said it (refused, timed out...). */
  error: string | null;
  /** The same, as one of a fixed set; null when up. */
  reason: DownReason | null;
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

/** The `_minecraft._tcp` SRV target of a name, if it has one; a failed lookup means none. */
async function srvTarget(host: string, timeoutMs: number): Promise<{ host: string; port: number } | null> {
  const resolver = new Resolver({ timeout: timeoutMs, tries: 1 });
  try {
    const [record] = await resolver.resolveSrv(`_minecraft._tcp.${host}`);
    return record ? { host: record.name, port: record.port } : null;
  } catch {
    return null;
  }
}

/**
 * The MOTD clean and with its `§` codes, from the description (a string or a chat component), as
 * minecraft-server-util gave them. The last ones are kept: a server's description rarely changes,
 * and formatting one walks it a character at a time.
 */
const motds = new Map<string, { raw: string; clean: string }>();
function motdOf(description: unknown): { raw: string; clean: string } {
  if (typeof description !== "string" && (typeof description !== "object" || description === null))
    throw new PingError(`bad answer: a description of type ${description === null ? "null" : typeof description}`);
  const key = typeof description === "string" ? description : JSON.stringify(description);
  let m = motds.get(key);
  if (!m) {
    const parsed = parse(description as Parameters<typeof parse>[0]);
    m = { raw: format(parsed), clean: clean(parsed) };
    // Bounded: at most 1,000 of at most 4 KiB (a server's answer is what it likes).
    if (key.length <= 4096) {
      if (motds.size >= 1000) motds.delete(motds.keys().next().value!);
      motds.set(key, m);
    }
  }
  return m;
}

function within<T>(ms: number, work: Promise<T>): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error("Address lookup timed out")), ms);
  });
  return Promise.race([work, late]).finally(() => clearTimeout(timer));
}

/**
 * Where to connect: the SRV target if the name has one, resolved here once and checked
 * against the outbound policy. The ping then connects to that address, never to the name, so
 * a resolver cannot answer a public address to the check and a private one to the connect.
 */
async function target(host: string, port: number, timeoutMs: number, policy: OutboundPolicy) {
  const srv = literalAddress(host) || host === "localhost" ? null : await srvTarget(host, timeoutMs);
  const name = srv?.host ?? host;
  return { address: await resolveAllowed(name, policy), port: srv?.port ?? port };
}

/**
 * One Server List Ping. Never throws: a server that does not answer within the timeout,
 * answers nonsense, or resolves to an address the policy refuses, is down with the reason.
 */
export async function ping(host: string, port: number, timeoutMs: number, policy: OutboundPolicy): Promise<PingResult> {
  try {
    // A literal address needs no lookup, so no timer races one (a timer and a race per ping of
    // most fleets); the policy still checks it below.
    const to = literalAddress(host)
      ? { address: await resolveAllowed(host, policy), port }
      : await within(timeoutMs, target(host, port, timeoutMs, policy));
    const r = await serverListPing(to.address, to.port, timeoutMs);
    const { json } = r;
    // What minecraft-server-util required of an answer: players, a version and a description.
    if (
      typeof json.players !== "object" ||
      json.players === null ||
      typeof json.version !== "object" ||
      json.version === null
    )
      throw new PingError("bad answer: the status has no players or no version");
    const motd = motdOf(json.description);
    return {
      online: true,
      latencyMs: Math.max(0, Math.round(r.latencyMs)),
      playersOnline: count(json.players.online),
      playersMax: count(json.players.max),
      version: clip(String(json.version.name ?? ""), 200),
      motd: clip(motd.clean, 500),
      motdRaw: clip(motd.raw, 500),
      error: null,
      reason: null,
      sample: players(json.players.sample),
    };
  } catch (err) {
    return {
      online: false,
      latencyMs: null,
      playersOnline: null,
      playersMax: null,
      version: null,
      motd: null,
      motdRaw: null,
      error: clip(failure(host, err), 200),
      reason: downReason(err),
      sample: null,
    };
  }
}

/**
 * The error as it is stored. A host name refused by policy is not followed by the address it
 * resolved to: that would tell the team what a name resolves to inside the service's network.
 */
function failure(host: string, err: unknown): string {
  if (err instanceof OutboundRefused && err.kind === "policy" && !literalAddress(host)) {
    return `refused by policy: ${host} may not be reached from this service`;
  }
  return err instanceof Error ? err.message : String(err);
}
