/** Parsers for what a Minecraft server prints: RCON answers and log lines. Each returns null when it does not recognise the text, so nothing is invented. */

/** Strips § formatting codes (Paper colours its command output). */
export const plain = (s: string) => s.replace(/§[0-9a-fk-orx]/gi, "");

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
export const isUuid = (s: string) => UUID.test(s);
const NAME = /^[A-Za-z0-9_.*-]{1,32}$/;
export const isPlayerName = (s: string) => NAME.test(s);

/** `list` / `list uuids`: "There are 2 of a max of 20 players online: Steve (uuid), Alex (uuid)". */
export function parseList(
  text: string,
): { online: number; max: number; players: { name: string; uuid?: string }[] } | null {
  const m = plain(text).match(/There are (\d+) (?:of a max of|\/) ?(\d+) players online:?\s*(.*)$/s);
  if (!m) return null;
  const players = m[3]!
    .split(",")
    .map((p) => p.trim())
    .filter(Boolean)
    .map((p) => {
      const u = p.match(/^(\S+) \(([0-9a-fA-F-]{36})\)$/);
      return u ? { name: u[1]!, uuid: u[2]!.toLowerCase() } : { name: p };
    });
  return { online: Number(m[1]), max: Number(m[2]), players };
}

/** Paper/Spigot `tps`: "TPS from last 1m, 5m, 15m: 19.98, 20.0, *20.0" -> the 1 minute figure. */
export function parsePaperTps(text: string): number | null {
  const m = plain(text).match(/TPS from last 1m, 5m, 15m:\s*\*?([\d.]+)/);
  return m ? Number(m[1]) : null;
}

/** Paper `mspt`: avg/min/max over 5s, 10s, 1m -> the 5 second average. */
export function parsePaperMspt(text: string): number | null {
  const t = plain(text);
  if (!/tick times/i.test(t)) return null;
  const m = t.match(/([\d.]+)\/([\d.]+)\/([\d.]+)/);
  return m ? Number(m[1]) : null;
}

/**
 * Vanilla 1.20.3+ `tick query`. The server reports its target rate and the average tick time; the
 * rate it achieves is the target while a tick fits in its slot, else one tick per average tick.
 */
export function parseTickQuery(text: string): { tps: number; mspt: number } | null {
  const t = plain(text);
  const rate = t.match(/Target tick rate: ([\d.]+) per second/);
  const avg = t.match(/Average time per tick: ([\d.]+) ?ms/);
  if (!rate || !avg) return null;
  const target = Number(rate[1]);
  const mspt = Number(avg[1]);
  const tps = mspt > 0 ? Math.min(target, 1000 / mspt) : target;
  return { tps: Math.round(tps * 100) / 100, mspt };
}

/** Bukkit/Paper `version`: "This server is running Paper version 1.21.4-231-... (MC: 1.21.4) ...". */
export function parseVersionCommand(text: string): string | null {
  const t = plain(text);
  const m = t.match(/running (.+?) version (\S+) \(MC: ([\d.]+)\)/);
  return m ? `${m[1]} ${m[3]} (${m[2]})` : null;
}

/** `banlist players`: "There are 2 ban(s):jeb_ was banned by Notch: Griefing..." -> names. */
export function parseBanlist(text: string): string[] | null {
  const t = plain(text);
  if (/There are no bans/i.test(t)) return [];
  if (!/There (?:are|is) \d+ ban/i.test(t)) return null;
  return [...t.matchAll(/(\S+?) was banned by/g)].map((m) => m[1]!.replace(/^.*:/, ""));
}

/** `-Xmx4G`, `-Xmx4096m`, `-Xmx4294967296` in a java command line, in MiB. */
export function parseXmx(cmdline: string[]): number | null {
  for (const arg of cmdline) {
    const m = arg.match(/^-Xmx(\d+)([kKmMgGtT]?)$/);
    if (!m) continue;
    const n = Number(m[1]);
    const unit = (m[2] ?? "").toLowerCase();
    const bytes =
      n * (unit === "k" ? 1024 : unit === "m" ? 1024 ** 2 : unit === "g" ? 1024 ** 3 : unit === "t" ? 1024 ** 4 : 1);
    return Math.floor(bytes / 1024 ** 2);
  }
  return null;
}

export type LogFact =
  | { kind: "uuid"; name: string; uuid: string }
  | { kind: "join"; name: string }
  | { kind: "leave"; name: string }
  | { kind: "version"; version: string };

/** Vanilla `[18:04:05] [Server thread/INFO]: msg` and Paper `[18:04:05 INFO]: msg`. */
const LINE = /^\[(\d{2}):(\d{2}):(\d{2})(?:\s+INFO)?\](?: \[[^\]]*\/INFO\])?: (.*)$/;

export function parseLogLine(line: string, now = new Date()): { at: Date; fact: LogFact } | null {
  const m = line.replace(/\r$/, "").match(LINE);
  if (!m) return null;
  const msg = plain(m[4]!);
  const fact = factOf(msg);
  if (!fact) return null;
  // The log carries the time of day in the server's local time; the day is today's unless that lies ahead.
  const at = new Date(now);
  at.setHours(Number(m[1]), Number(m[2]), Number(m[3]), 0);
  if (at.getTime() > now.getTime() + 60_000) at.setDate(at.getDate() - 1);
  return { at, fact };
}

function factOf(msg: string): LogFact | null {
  const id = msg.match(/^UUID of player (\S{1,32}) is ([0-9a-fA-F-]{36})$/);
  if (id && isUuid(id[2]!)) return { kind: "uuid", name: id[1]!, uuid: id[2]!.toLowerCase() };
  const join = msg.match(/^(\S{1,32}) joined the game$/);
  if (join && isPlayerName(join[1]!)) return { kind: "join", name: join[1]! };
  const leave = msg.match(/^(\S{1,32}) left the game$/);
  if (leave && isPlayerName(leave[1]!)) return { kind: "leave", name: leave[1]! };
  const version = msg.match(/^Starting minecraft server version (.+)$/);
  return version ? { kind: "version", version: version[1]! } : null;
}

/** `&a` colour codes as the § codes tellraw's text understands. */
export const tellraw = (message: string) =>
  `tellraw @a ${JSON.stringify({ text: message.replace(/&([0-9a-fk-or])/gi, "§$1") })}`;
