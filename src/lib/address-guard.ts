import { promises as dns } from "node:dns";
import ipaddr from "ipaddr.js";

/**
 * Which addresses the platform may open outbound connections to (server pings now, webhooks
 * later). Anything a user registers could otherwise make this process reach its own machine,
 * the LAN, or a cloud metadata service. Depends on nothing else in src so any caller can use it.
 */
export interface OutboundPolicy {
  /** Allows loopback, RFC 1918, IPv6 ULA, link-local and CGNAT: self-hosting on a LAN. */
  allowPrivate: boolean;
}

export class OutboundRefused extends Error {
  override name = "OutboundRefused";
  constructor(
    message: string,
    /** `policy`: every address the host has is refused; `no_address`: the name resolved to nothing. */
    readonly kind: "policy" | "no_address" = "policy",
  ) {
    super(message);
  }
}

/** Reachable with allowPrivate; everything else that is not plain unicast is always refused. */
const PRIVATE_RANGES = new Set(["loopback", "private", "linkLocal", "carrierGradeNat", "uniqueLocal"]);
/** Refused even with allowPrivate: no game server lives there, only instance credentials. */
const METADATA = new Set(["169.254.169.254", "fd00:ec2::254"]);

type Addr = ipaddr.IPv4 | ipaddr.IPv6;

/** IPv6 forms that carry an IPv4 address the packet ends up at (mapped, SIIT, NAT64 well-known prefix). */
function embeddedV4(a: ipaddr.IPv6): ipaddr.IPv4 | null {
  const range = a.range();
  if (range !== "ipv4Mapped" && range !== "rfc6145" && !(range === "rfc6052" && a.parts[2] === 0)) return null;
  const b = a.toByteArray();
  return new ipaddr.IPv4(b.slice(12));
}

function parse(text: string): Addr | null {
  const bare = text.startsWith("[") && text.endsWith("]") ? text.slice(1, -1) : text;
  if (!ipaddr.isValid(bare)) return null;
  const a = ipaddr.parse(bare);
  if (a.kind() === "ipv6") return embeddedV4(a as ipaddr.IPv6) ?? a;
  return a;
}

/**
 * Both answers depend on the string alone (and the policy's one flag), and the pinger asks them
 * for the same few thousand hosts every interval: parsing each time was a tenth of a ping's own
 * CPU. Bounded, and started afresh when full rather than tracking use.
 */
const MEMO_MAX = 10_000;
const literals = new Map<string, string | null>();
const refusals = new Map<string, string | null>();
function remember(memo: Map<string, string | null>, key: string, value: string | null) {
  if (memo.size >= MEMO_MAX) memo.clear();
  memo.set(key, value);
}

/**
 * The address a host string denotes when it is a literal, in any form a resolver would accept
 * (`2130706433`, `127.1`, `0x7f.1`, `[::ffff:127.0.0.1]`), normalised; null for a name.
 */
export function literalAddress(host: string): string | null {
  let known = literals.get(host);
  if (known === undefined) {
    known = parse(host.trim())?.toString() ?? null;
    remember(literals, host, known);
  }
  return known;
}

/** Why an address is refused under the policy, or null when it may be reached. */
export function refusal(address: string, policy: OutboundPolicy): string | null {
  const key = `${policy.allowPrivate ? "p" : "-"}${address}`;
  let known = refusals.get(key);
  if (known === undefined) {
    known = judge(address, policy);
    remember(refusals, key, known);
  }
  return known;
}

function judge(address: string, policy: OutboundPolicy): string | null {
  const a = parse(address);
  if (!a) return `${address} is not an IP address`;
  const normal = a.toString();
  if (METADATA.has(normal)) return `${normal} is a cloud metadata address`;
  const range = a.range();
  if (range === "unicast") return null;
  if (PRIVATE_RANGES.has(range)) {
    return policy.allowPrivate
      ? null
      : `${normal} is a ${range} address (private targets are refused in production unless OUTBOUND_ALLOW_PRIVATE=true)`;
  }
  return `${normal} is a ${range} address`;
}

export type Lookup = (host: string) => Promise<string[]>;

const systemLookup: Lookup = async (host) =>
  (await dns.lookup(host, { all: true, verbatim: true })).map((r) => r.address);

/**
 * Resolves a host once and returns an address the policy allows. Callers connect to that
 * address, not to the name again, so a second lookup cannot answer differently (DNS rebinding).
 * Throws OutboundRefused when no address is allowed.
 */
export async function resolveAllowed(host: string, policy: OutboundPolicy, lookup: Lookup = systemLookup) {
  const literal = literalAddress(host);
  const addresses = literal ? [literal] : await lookup(host);
  if (addresses.length === 0) throw new OutboundRefused(`${host} has no address`, "no_address");
  let first: string | null = null;
  for (const address of addresses) {
    const why = refusal(address, policy);
    if (why === null) return literalAddress(address)!;
    first ??= why;
  }
  throw new OutboundRefused(`refused ${host}: ${first}`);
}
