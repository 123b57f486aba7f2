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

/** Which proxy printed a line, for facts that only a proxy's log carries (the player's UUID is not in it). */
export type ProxyKind = "velocity" | "bungeecord";

export type LogFact =
  | { kind: "uuid"; name: string; uuid: string }
  /**
   * The player is on the server (on a proxy: on the network). `formerly`: the name the server knew
   * before a rename; `address` (Velocity): the connection, so a stale connection's leave is told apart.
   */
  | { kind: "join"; name: string; formerly?: string; address?: string; proxy?: ProxyKind }
  | { kind: "leave"; name: string; reason?: string; address?: string; proxy?: ProxyKind }
  /** A proxy connecting a player to one of its servers: the first one after the login, then every hop. */
  | { kind: "server"; name: string; server: string; proxy: ProxyKind }
  | { kind: "version"; version: string }
  /** The server announced its stop (`/stop`: "Stopping the server"): what follows is a planned stop, not a crash. */
  | { kind: "stopping" }
  /** The server finished starting ("Done (3.2s)! For help, type "help""). */
  | { kind: "started" };

/** A line in a layout the parser knows, with what it says (null for most lines); null from parseLogLine: not a known layout. */
export type LogLine = { fact: LogFact; at: Date } | { fact: null; at: null };
const NOTHING: LogLine = { fact: null, at: null };

/**
 * Every known layout is a time, a level, optionally a thread and a logger, then the message:
 *   [18:04:05] [Server thread/INFO]: msg                     vanilla, Paper/Spigot/Purpur/Folia, Fabric, Velocity 1.x/3.0
 *   [18:04:05 INFO]: msg    [18:04:05 INFO] [Plugin]: msg    the same servers' consoles, Velocity, Waterfall, Arclight
 *   [18:04:05] [Server thread/INFO] [minecraft/DedicatedServer]: msg                    Forge to 1.16.4, Mohist, Magma
 *   [25Nov2026 12:34:56.789] [Server thread/INFO] [net.minecraft.server.MinecraftServer/]: msg  Forge 1.13+, NeoForge
 *   [18:04:05] [Server thread/INFO] (Minecraft) msg          Fabric with its own log configuration
 *   [Mon, 4. Oct 2021 18:34:46 UTC INFO] msg                 a date and zone in the time bracket
 * The day part of the time bracket is anything up to the time (the JVM prints month names in its locale);
 * it is tried last, so the common undated layouts cost one pass.
 * A logger in brackets counts only with its colon, and one in parentheses only after a thread, so a
 * message that starts with `[Name]` (`/say`, chat plugins) is never taken for one.
 */
const BRACKETED =
  /^\[(?:([^\]]*?) )??(\d{1,2}):(\d{2}):(\d{2})(?:[.,]\d{1,9})?(?: ([A-Z]{2,5}))?(?: ([A-Z]+))?\](?: \[[^\]]*\/([A-Z]+)\](?: \[[^\]]*\]:| \([^)]*\)|:)?| \[[^\]]*\]:|:)?(?: |$)/;
/** BungeeCord's own files (proxy.log.0) `14:24:22 [INFO] msg`, and pre-1.7 server.log `2019-02-16 00:25:12 [INFO] msg`; the level is in the JVM's language. */
const BARE = /^(?:(\S+) )??(\d{1,2}):(\d{2}):(\d{2})(?:[.,]\d{1,9})? \[([^\]\s]+)\] /;
/**
 * Levels that are not INFO (BungeeCord's in Chinese too: 警告, 严重). Any other level, such as
 * BungeeCord's `[信息]` or `[INFORMATION]` in other languages, counts as INFO: every fact is an INFO line.
 */
const NOT_INFO = new Set("WARN WARNING ERROR SEVERE FATAL DEBUG TRACE FINE FINER FINEST CONFIG 警告 严重".split(" "));
const MONTHS = "jan feb mar apr may jun jul aug sep oct nov dec".split(" ");
const ANSI = /\x1b\[[0-9;]*m/g;

/** A line's layout taken apart: the time (with the day part when there is one), the level and the message. */
export interface LogLayout {
  date: string | undefined;
  h: number;
  m: number;
  s: number;
  level: string;
  msg: string;
}

/** The layout of a line, or null when it is not one the parser knows (a stack trace line, another program's output). */
export function splitLogLine(line: string): LogLayout | null {
  let text = line.charCodeAt(line.length - 1) === 13 ? line.slice(0, -1) : line;
  if (text.charCodeAt(0) === 27) text = text.replace(ANSI, "");
  const first = text.charCodeAt(0);
  if (first === 91) {
    const b = BRACKETED.exec(text);
    const level = b && (b[7] ?? b[6] ?? b[5]);
    if (!level) return null;
    return { date: b[1], h: Number(b[2]), m: Number(b[3]), s: Number(b[4]), level, msg: text.slice(b[0].length) };
  }
  if (first < 48 || first > 57) return null;
  const b = BARE.exec(text);
  return (
    b && { date: b[1], h: Number(b[2]), m: Number(b[3]), s: Number(b[4]), level: b[5]!, msg: text.slice(b[0].length) }
  );
}

/**
 * One log line of any family the agent knows: the layout is stripped first (one anchored
 * expression), then only the message expressions whose cheap test passes run.
 */
export function parseLogLine(line: string, now = new Date()): LogLine | null {
  const l = splitLogLine(line);
  if (!l) return null;
  if (NOT_INFO.has(l.level)) return NOTHING;
  const fact = factOf(l.msg.includes("§") ? plain(l.msg) : l.msg);
  return fact ? { fact, at: stamp(l.date, l.h, l.m, l.s, now) } : NOTHING;
}

/** The log carries local time; with no day in it (or one in a language we do not read), the day is today's unless that lies ahead. */
function stamp(date: string | undefined, h: number, m: number, s: number, now: Date): Date {
  const day = date ? calendarDay(date) : null;
  if (day) return new Date(day[0], day[1], day[2], h, m, s, 0);
  const at = new Date(now);
  at.setHours(h, m, s, 0);
  if (at.getTime() > now.getTime() + 60_000) at.setDate(at.getDate() - 1);
  return at;
}

function calendarDay(date: string): [number, number, number] | null {
  const iso = /^(\d{4})-(\d{2})-(\d{2})$/.exec(date);
  if (iso) return [Number(iso[1]), Number(iso[2]) - 1, Number(iso[3])];
  const forge = /^(\d{1,2})([A-Za-z]{3})[a-z]*\.?(\d{4})$/.exec(date);
  const month = forge ? MONTHS.indexOf(forge[2]!.toLowerCase()) : -1;
  return forge && month >= 0 ? [Number(forge[3]), month, Number(forge[1])] : null;
}

const UUID_LINE = /^UUID of player (\S{1,32}) is ([0-9a-fA-F-]{36})$/;
const JOINED = /^(\S{1,32}) (?:\(formerly known as (\S{1,32})\) )?joined the game$/;
const LEFT = /^(\S{1,32}) left the game$/;
/** Logged whatever a plugin does to the join message (which can be changed or hidden). */
const LOGGED_IN = /^([^\s[]{1,32})\[.*\] logged in with entity id -?\d+ at \(.*\)$/;
const LOST = /^(\S{1,32}) lost connection: (.*)$/;
const VELOCITY_PLAYER = /^\[connected player\] (\S{1,32}) \((.*?)\) has (connected|disconnected)(?:: (.*))?$/;
const VELOCITY_SERVER = /^\[server connection\] (\S{1,32}) -> (\S+) has connected$/;
/** A connection in brackets: no spaces, an IPv6 address in its own brackets (`[Steve,/[::1]:5678]`). */
const HANDLE = String.raw`\[((?:[^\s[\]]|\[[^\s\]]*\])+)\]`;
const BUNGEE_SERVER = new RegExp(String.raw`^${HANDLE} <-> ServerConnector \[([^\]]+)\] has connected$`);
const BUNGEE_UPSTREAM = new RegExp(`^${HANDLE} -> UpstreamBridge has (connected|disconnected)$`);
/** Velocity refusing a second login of a player who is still connected: the first connection stays. */
const ALREADY_CONNECTED = "You are already connected to this proxy!";

/** BungeeCord writes a connection as `[Steve]`, `[Steve,/1.2.3.4:5678]`; Waterfall as `[Steve|/1.2.3.4:5678]` or `[/1.2.3.4:5678|Steve]`. */
function bungeeName(handle: string): string | null {
  for (const part of handle.split(/[,|]/)) if (part[0] !== "/" && isPlayerName(part)) return part;
  return null;
}

function factOf(msg: string): LogFact | null {
  // Chat (`<Steve> …`, `[Not Secure] <Steve> …`) never passes: every expression is anchored at the start and a name has no spaces or brackets.
  if (msg.endsWith(" joined the game")) {
    const join = JOINED.exec(msg);
    if (!join || !isPlayerName(join[1]!)) return null;
    if (join[2] === undefined) return { kind: "join", name: join[1]! };
    return isPlayerName(join[2]) ? { kind: "join", name: join[1]!, formerly: join[2] } : null;
  }
  if (msg.endsWith(" left the game")) {
    const leave = LEFT.exec(msg);
    return leave && isPlayerName(leave[1]!) ? { kind: "leave", name: leave[1]! } : null;
  }
  if (msg.startsWith("UUID of player ")) {
    const id = UUID_LINE.exec(msg);
    return id && isPlayerName(id[1]!) && isUuid(id[2]!)
      ? { kind: "uuid", name: id[1]!, uuid: id[2]!.toLowerCase() }
      : null;
  }
  // Every proxy line starts with the connection in brackets; no other fact does.
  if (msg.charCodeAt(0) === 91) return proxyFactOf(msg);
  if (msg.includes(" logged in with entity id ")) {
    const login = LOGGED_IN.exec(msg);
    return login && isPlayerName(login[1]!) ? { kind: "join", name: login[1]! } : null;
  }
  if (msg.includes(" lost connection: ")) {
    const lost = LOST.exec(msg);
    return lost && isPlayerName(lost[1]!) ? { kind: "leave", name: lost[1]!, reason: lost[2]! } : null;
  }
  // Vanilla, Paper and Spigot print this for `/stop` only; a crash or a kill prints "Stopping server" or nothing.
  if (msg === "Stopping the server") return { kind: "stopping" };
  if (msg.startsWith("Done (") && msg.includes("For help, type")) return { kind: "started" };
  return versionOf(msg);
}

function proxyFactOf(msg: string): LogFact | null {
  if (msg.startsWith("[connected player] ")) {
    const v = VELOCITY_PLAYER.exec(msg);
    if (!v || !isPlayerName(v[1]!)) return null;
    const [name, address] = [v[1]!, v[2]!];
    if (v[3] === "connected") return { kind: "join", name, address, proxy: "velocity" };
    if (v[4] === ALREADY_CONNECTED) return null;
    return v[4] === undefined
      ? { kind: "leave", name, address, proxy: "velocity" }
      : { kind: "leave", name, address, reason: v[4], proxy: "velocity" };
  }
  if (msg.startsWith("[server connection] ")) {
    const v = VELOCITY_SERVER.exec(msg);
    return v && isPlayerName(v[1]!) ? { kind: "server", name: v[1]!, server: v[2]!, proxy: "velocity" } : null;
  }
  if (msg.includes("] <-> ServerConnector [")) {
    const b = BUNGEE_SERVER.exec(msg);
    const name = b && bungeeName(b[1]!);
    return name ? { kind: "server", name, server: b[2]!, proxy: "bungeecord" } : null;
  }
  if (msg.includes("] -> UpstreamBridge has ")) {
    const b = BUNGEE_UPSTREAM.exec(msg);
    const name = b && bungeeName(b[1]!);
    if (!name) return null;
    return b[2] === "connected"
      ? { kind: "join", name, proxy: "bungeecord" }
      : { kind: "leave", name, proxy: "bungeecord" };
  }
  return null;
}

function versionOf(msg: string): LogFact | null {
  if (msg.startsWith("Starting minecraft server version "))
    return { kind: "version", version: msg.slice("Starting minecraft server version ".length) };
  if (msg.startsWith("Booting up Velocity ") && msg.endsWith("..."))
    return { kind: "version", version: msg.slice("Booting up ".length, -3) };
  const proxy = msg.startsWith("Enabled ") ? /^Enabled (\S+) version (git:\S+)$/.exec(msg) : null;
  return proxy ? { kind: "version", version: `${proxy[1]} ${proxy[2]}` } : null;
}

/** `&a` colour codes as the § codes tellraw's text understands. */
export const tellraw = (message: string) =>
  `tellraw @a ${JSON.stringify({ text: message.replace(/&([0-9a-fk-or])/gi, "§$1") })}`;

/** What the agent reports of a crash report: its description and the first lines of the exception. */
export interface CrashSummary {
  description: string;
  lines: string[];
}

/** Lines of the exception sent: the exception and the top of its stack, enough to name the cause. */
export const CRASH_LINES = 12;

/**
 * A Minecraft crash report (`---- Minecraft Crash Report ----`, a comment, `Time:`,
 * `Description:`, a blank line, then the exception and its stack): the description and the first
 * lines after it, up to the blank line that ends the stack. Null when it is not one (or not yet
 * fully written: no description).
 */
export function parseCrashReport(text: string): CrashSummary | null {
  if (!text.includes("---- Minecraft Crash Report ----")) return null;
  const all = text.split(/\r?\n/);
  const at = all.findIndex((l) => l.startsWith("Description: "));
  if (at < 0) return null;
  const description = all[at]!.slice("Description: ".length).trim().slice(0, 500);
  const lines: string[] = [];
  for (const l of all.slice(at + 1)) {
    if (l.trim() === "") {
      if (lines.length > 0) break;
      continue;
    }
    lines.push(l.replace(/\t/g, "    ").trimEnd().slice(0, 500));
    if (lines.length >= CRASH_LINES) break;
  }
  return { description, lines };
}
