import { createHash } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { ProxyKind } from "./parse";

/**
 * A proxy's log names players but never gives their UUIDs. In offline mode the UUID follows from
 * the name, as the proxy computes it (Java's UUID.nameUUIDFromBytes("OfflinePlayer:" + name), a
 * version 3 UUID); in online mode it is the account's, which Mojang's profile API answers by name.
 * The service computes the same in src/identity/protocol.ts; the agent ships on its own, so it keeps a copy.
 */
export function offlineUuid(name: string): string {
  const b = createHash("md5").update(`OfflinePlayer:${name}`, "utf8").digest();
  b[6] = (b[6]! & 0x0f) | 0x30;
  b[8] = (b[8]! & 0x3f) | 0x80;
  const h = b.toString("hex");
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

/** `online-mode` in velocity.toml, `online_mode` in BungeeCord's and Waterfall's config.yml; both default to true. */
export function proxyOnlineMode(serverDir: string | null, proxy: ProxyKind): boolean {
  const [file, key] =
    proxy === "velocity"
      ? ["velocity.toml", /^\s*online-mode\s*=\s*(\w+)/m]
      : ["config.yml", /^\s*online_mode:\s*(\w+)/m];
  const path = serverDir ? join(serverDir, file) : null;
  if (!path || !existsSync(path)) return true;
  try {
    return key.exec(readFileSync(path, "utf8"))?.[1] !== "false";
  } catch {
    return true;
  }
}

/** A UUID for an account name from a Mojang-style profile endpoint: null when no account has the name, "unavailable" when it did not answer. */
export async function lookupUuid(
  baseUrl: string,
  name: string,
  timeoutMs: number,
): Promise<string | null | "unavailable"> {
  try {
    const res = await fetch(baseUrl + encodeURIComponent(name), {
      headers: { "user-agent": "mc-platform-agent/0.1" },
      signal: AbortSignal.timeout(timeoutMs),
    });
    if (res.status === 204 || res.status === 404) return null;
    if (res.status !== 200) return "unavailable";
    const body = (await res.json()) as { id?: unknown };
    const id = typeof body.id === "string" ? body.id.replace(/-/g, "").toLowerCase() : "";
    if (!/^[0-9a-f]{32}$/.test(id)) return "unavailable";
    return `${id.slice(0, 8)}-${id.slice(8, 12)}-${id.slice(12, 16)}-${id.slice(16, 20)}-${id.slice(20)}`;
  } catch {
    return "unavailable";
  }
}
