import { readdirSync, readFileSync } from "node:fs";

/** CPU seconds (user + system) of a process, from /proc; 0 once it is gone. */
export function cpuSeconds(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return 0;
  }
}

/**
 * CPU seconds of the PostgreSQL processes on this machine: with `database`, only the backends
 * connected to it (their title is "postgres: [cluster:] <user> <database> <client> ..."), so other work on
 * the same server does not count; without, every process named postgres. A backend that exits
 * between two readings takes its seconds with it: keep the pool open across a measurement.
 */
export function postgresCpuSeconds(database?: string): number {
  let total = 0;
  for (const pid of readdirSync("/proc")) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      if (readFileSync(`/proc/${pid}/comm`, "utf8").trim() !== "postgres") continue;
      if (database !== undefined) {
        // After "postgres:" and the cluster name if one is set ("15/main:"): user, database, client.
        const words = readFileSync(`/proc/${pid}/cmdline`, "utf8").replaceAll("\0", " ").trim().split(/\s+/);
        const rest = words.slice(words.findLastIndex((w, i) => i < 3 && w.endsWith(":")) + 1);
        if (rest[1] !== database) continue;
      }
      total += cpuSeconds(Number(pid));
    } catch {}
  }
  return total;
}
