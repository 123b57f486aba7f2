import { createHash, randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, readdirSync, readlinkSync, realpathSync, statSync } from "node:fs";
import { appendFileSync } from "node:fs";
import { join } from "node:path";
import { Cron } from "croner";
import { backoffMs, ServiceApi } from "./api";
import type { AgentConfig } from "./config";
import { errorText, type Logger } from "./log";
import {
  isPlayerName,
  isUuid,
  type LogFact,
  type ProxyKind,
  parseBanlist,
  parseCrashReport,
  parseList,
  parseLogLine,
  parsePaperMspt,
  parsePaperTps,
  parseTickQuery,
  parseVersionCommand,
  parseXmx,
  tellraw,
} from "./parse";
import { lookupUuid, offlineUuid, proxyOnlineMode } from "./profiles";
import { Rcon } from "./rcon";
import { DiskQueue, type QueuedEvent, readJson, writeAtomic } from "./store";
import { LogTail, type TailPosition } from "./tail";

interface BanEntry {
  uuid: string;
  name: string;
  created?: string;
  source?: string;
  expires?: string;
  reason?: string;
}

/** What survives a restart, in state.json beside the queue. */
interface AgentState {
  tail: TailPosition | null;
  online: Record<string, string>;
  names: Record<string, string>;
  /** banned-players.json as last read; null before the first read. */
  bans: Record<string, BanEntry> | null;
  /** Players whose next ban or pardon in game is the agent applying the dashboard's config: not reported back. */
  suppress: string[];
  appliedBans: string[];
  appliedPardons: string[];
  /** Kick ids already carried out: each kick is run once. */
  appliedKicks: string[];
  ranksCreated: string[];
  rankHashes: Record<string, string>;
  /** Players who opted out (GET /agent/config `opt_outs`): none of their joins or leaves is sent. */
  optOuts: string[];
  /**
   * Bans from the dashboard whose player's name the service no longer holds (erased: the name is
   * a placeholder): applied by name when the player next joins, the one time the agent learns it.
   */
  bansByUuid: Record<string, { key: string; reason?: string }>;
  /** Crash report files already seen (crash-reports/); null before the first look, when those there are taken as old. */
  crashReports: string[] | null;
}

/** The parts of GET /agent/config the agent reads (docs/agent-protocol.md). */
interface Rank {
  name: string;
  display_name: string | null;
  weight: number;
  prefix: string | null;
  suffix: string | null;
  permissions: string[];
  parents: string[];
}
interface Announcement {
  announcement_id: string;
  message: string;
  interval_seconds: number | null;
  schedule: string | null;
}
interface RemoteConfig {
  opt_outs?: string[];
  bans?: { uuid: string; name: string; reason?: string; created: string }[];
  pardons?: { uuid: string; lifted_at: string }[];
  kicks?: { kick_id: string; name: string; reason: string }[];
  announcements?: Announcement[];
  ranks?: Rank[];
}

const EMPTY: AgentState = {
  tail: null,
  online: {},
  names: {},
  bans: null,
  suppress: [],
  appliedBans: [],
  appliedPardons: [],
  appliedKicks: [],
  ranksCreated: [],
  rankHashes: {},
  optOuts: [],
  bansByUuid: {},
  crashReports: null,
};
const BATCH_EVENTS = 200;
/** Lines read with none in a known layout before the agent says it cannot read this server's log (stack trace lines aside). */
const UNRECOGNISED_LINES = 50;
/** A join line for a player already online this close to the last one is the same login's other line (login and join message). */
const SAME_LOGIN_MS = 5000;
const BATCH_BYTES = 48 * 1024;
const REMEMBERED = 2000;

const hash = (v: unknown) => createHash("sha256").update(JSON.stringify(v)).digest("hex").slice(0, 16);
const idPart = (s: string) => s.replace(/[^A-Za-z0-9._:-]/g, "_");
/** banned-players.json dates ("2025-01-31 18:04:05 +0000") as RFC 3339. */
function banDate(s: string | undefined): string | undefined {
  const m = s?.match(/^(\d{4}-\d{2}-\d{2}) (\d{2}:\d{2}:\d{2}) ([+-]\d{2})(\d{2})$/);
  return m ? `${m[1]}T${m[2]}${m[3]}:${m[4]}` : undefined;
}
const remember = (list: string[], item: string) => {
  list.push(item);
  if (list.length > REMEMBERED) list.splice(0, list.length - REMEMBERED);
};

export class Agent {
  private readonly api: ServiceApi;
  readonly rcon: Rcon;
  private readonly queue: DiskQueue;
  private readonly statePath: string;
  private state: AgentState;
  private tail: LogTail | null = null;
  private readonly bootId = randomBytes(4).toString("hex");
  private seq = 0;
  private timers: Timer[] = [];
  private running = false;
  private wake: (() => void) | null = null;
  private sender: Promise<void> | null = null;
  private ticking: Promise<void> = Promise.resolve();
  private bansStamp = "";
  private reconciled = false;
  private tickMode: "paper" | "vanilla" | null = null;
  private luckPerms: boolean | null = null;
  private warnedRanks = "";
  private etag: string | null = null;
  private configHash = "";
  private announcements = new Map<string, { key: string; stop(): void }>();
  private serverPid: number | null;
  private serviceDown = false;
  /** Until a line in a known layout is read: how many were not, and the first of them. */
  private layoutKnown = false;
  private unknownLines = 0;
  private unknownSample = "";
  /** Per UUID online: when the session's first line was logged, and (Velocity) its connection. */
  private joinedAt = new Map<string, number>();
  private connection = new Map<string, string>();
  private onlineMode: Partial<Record<ProxyKind, boolean>> = {};
  version: string | null = null;

  constructor(
    private readonly config: AgentConfig,
    private readonly log: Logger,
  ) {
    mkdirSync(config.stateDir, { recursive: true });
    this.api = new ServiceApi(config);
    this.rcon = new Rcon(config.rconHost, config.rconPort, config.rconPassword, log);
    this.queue = new DiskQueue(config.stateDir, config.queueMaxBytes, log);
    this.statePath = join(config.stateDir, "state.json");
    this.state = { ...EMPTY, ...readJson<AgentState>(this.statePath) };
    this.serverPid = config.serverPid;
    if (config.serverDir) this.tail = new LogTail(this.logFile(), this.state.tail);
  }

  /** logs/latest.log, as every server and Velocity and Waterfall write; BungeeCord writes proxy.log.0 beside its jar. */
  private logFile(): string {
    const dir = this.config.serverDir!;
    const latest = join(dir, "logs", "latest.log");
    const bungee = join(dir, "proxy.log.0");
    return !existsSync(latest) && existsSync(bungee) ? bungee : latest;
  }

  async start() {
    this.running = true;
    this.log.info("agent_started", {
      url: this.config.url,
      rcon: `${this.config.rconHost}:${this.config.rconPort}`,
      server_dir: this.config.serverDir,
      state_dir: this.config.stateDir,
      queued_bytes: this.queue.pendingBytes,
    });
    if (!this.config.serverDir)
      this.log.warn("no_server_dir", { detail: "joins and leaves need the server's logs; only RCON is used" });
    await this.tick();
    this.log.info("agent_ready", {
      players_reconciled: this.reconciled,
      online: Object.keys(this.state.online).length,
    });
    this.sender = this.sendLoop();
    const every = (ms: number, fn: () => Promise<void>) => {
      const run = () => void fn().catch((e) => this.log.error("task_failed", { error: errorText(e) }));
      run();
      this.timers.push(setInterval(run, ms));
    };
    this.timers.push(setInterval(() => void this.tick(), this.config.logPollMs));
    every(this.config.heartbeatSeconds * 1000, () => this.heartbeat());
    every(this.config.configPollSeconds * 1000, () => this.pullConfig());
  }

  /** Graceful stop: no new work, one last delivery attempt, state on disk, connections closed. */
  async stop() {
    if (!this.running) return;
    this.running = false;
    for (const t of this.timers) clearInterval(t);
    for (const a of this.announcements.values()) a.stop();
    this.wake?.();
    await this.ticking;
    await this.sender;
    if (this.queue.pendingBytes > 0) await this.sendOnce();
    this.save();
    this.tail?.close();
    this.rcon.close();
    this.log.info("agent_stopped", { queued_bytes: this.queue.pendingBytes });
  }

  private save() {
    writeAtomic(this.statePath, JSON.stringify(this.state));
  }

  private nextId(kind: string) {
    return `${kind}.${this.bootId}.${++this.seq}`;
  }

  /** Log and ban file, one at a time: events go to the queue before the read position is saved. */
  private tick(): Promise<void> {
    this.ticking = this.ticking.then(async () => {
      if (!this.running) return;
      try {
        const events = [...(await this.readLog()), ...this.readBans(), ...this.readCrashReports()];
        if (!this.reconciled) events.push(...(await this.reconcile()));
        await this.banOnJoin(events);
        this.enqueue(events);
        if (this.tail) this.state.tail = this.tail.position;
        this.save();
      } catch (e) {
        this.log.error("collect_failed", { error: errorText(e) });
      }
    });
    return this.ticking;
  }

  private enqueue(all: QueuedEvent[]) {
    // Opted-out players are still followed in memory (a leave must match its join) but nothing
    // of theirs is queued or sent. Bans are not collection: they go as always.
    const quiet = new Set(this.state.optOuts);
    const events = all.filter((e) => !((e.type === "join" || e.type === "leave") && quiet.has(e.uuid ?? "")));
    if (!events.length) return;
    this.queue.append(events);
    for (const e of events) this.log.debug("event", { type: e.type, event_id: e.event_id, name: e.name });
    this.wake?.();
  }

  private async readLog(): Promise<QueuedEvent[]> {
    if (!this.tail) return [];
    if (!this.tail.opened && this.logFile() !== this.tail.path)
      this.tail = new LogTail(this.logFile(), this.state.tail);
    const events: QueuedEvent[] = [];
    const listed: { map?: Map<string, string> | null } = {};
    for (const line of this.tail.poll()) {
      if (this.config.restartLine && line.text.includes(this.config.restartLine)) {
        events.push(this.stopping(line.text, `log.${line.id}`, parseLogLine(line.text)?.at ?? new Date()));
        continue;
      }
      const parsed = parseLogLine(line.text);
      if (!this.layoutKnown) this.watchLayout(line.text, parsed !== null);
      if (!parsed?.fact) continue;
      const { fact, at } = parsed;
      const id = `log.${line.id}`;
      if (fact.kind === "uuid") this.state.names[fact.name] = fact.uuid;
      else if (fact.kind === "version") {
        this.version = fact.version;
        this.log.info("server_version", { version: fact.version });
      } else if (fact.kind === "stopping") {
        events.push(this.stopping(line.text, id, at));
      } else if (fact.kind === "started") {
        this.log.info("server_started", {});
        events.push({ event_id: id, type: "server_started", at: at.toISOString() });
      } else if (fact.kind === "leave") {
        const event = this.left(fact, at, id);
        if (event) events.push(event);
      } else if (fact.kind === "server" && this.uuidOnline(fact.name)) {
        // The protocol has no field for the server a player is on; the hop stays in the agent's log.
        this.log.debug("player_server", { name: fact.name, server: fact.server });
      } else {
        const event = await this.joined(fact, at, id, listed);
        if (event) events.push(event);
      }
    }
    return events;
  }

  /** A stop the server announced: the platform takes the down that follows as planned (no incident, no alert). */
  private stopping(text: string, id: string, at: Date): QueuedEvent {
    this.log.info("server_stopping", { line: text.trim().slice(0, 300) });
    return { event_id: id, type: "server_stopping", line: text.trim().slice(0, 300), at: at.toISOString() };
  }

  /**
   * Crash reports the server wrote to crash-reports/ since the agent first looked: each sent once,
   * with its description and the first lines of the exception. A file still being written (touched
   * in the last half second) is read on a later tick.
   */
  private readCrashReports(): QueuedEvent[] {
    if (!this.config.serverDir) return [];
    const dir = join(this.config.serverDir, "crash-reports");
    let names: string[] = [];
    try {
      names = readdirSync(dir)
        .filter((n) => n.endsWith(".txt"))
        .sort();
    } catch {}
    if (this.state.crashReports === null) {
      this.state.crashReports = names.slice(-REMEMBERED);
      return [];
    }
    const seen = new Set(this.state.crashReports);
    const events: QueuedEvent[] = [];
    for (const name of names) {
      if (seen.has(name)) continue;
      let text: string;
      let mtime: Date;
      try {
        mtime = statSync(join(dir, name)).mtime;
        if (Date.now() - mtime.getTime() < 500) continue;
        text = readFileSync(join(dir, name), "utf8");
      } catch {
        continue;
      }
      remember(this.state.crashReports, name);
      const summary = parseCrashReport(text);
      if (!summary) {
        this.log.warn("crash_report_unreadable", { file: name });
        continue;
      }
      this.log.warn("crash_report", { file: name, description: summary.description });
      events.push({
        event_id: `crash.${idPart(name)}`.slice(0, 100),
        type: "crash_report",
        file: name.slice(0, 200),
        description: summary.description,
        lines: summary.lines,
        at: mtime.toISOString(),
      });
    }
    return events;
  }

  /** Once: the log is in no layout the agent knows, so joins and leaves will not be seen (heartbeats still arrive). */
  private watchLayout(text: string, known: boolean) {
    if (known) {
      this.layoutKnown = true;
      return;
    }
    // Stack frames and blank lines continue a line of any layout.
    if (text === "" || text.charCodeAt(0) === 9 || text.charCodeAt(0) === 32) return;
    if (this.unknownLines++ === 0) this.unknownSample = text.slice(0, 200);
    if (this.unknownLines !== UNRECOGNISED_LINES) return;
    this.log.warn("log_format_unrecognised", {
      file: this.tail?.path,
      lines: this.unknownLines,
      sample: this.unknownSample,
      detail: "no line is in a layout the agent knows: joins and leaves are not collected",
    });
  }

  private uuidOnline(name: string): string | undefined {
    return Object.entries(this.state.online).find(([, n]) => n === name)?.[0];
  }

  private async joined(
    fact: Extract<LogFact, { kind: "join" | "server" }>,
    at: Date,
    id: string,
    listed: { map?: Map<string, string> | null },
  ): Promise<QueuedEvent | null> {
    const { name, proxy } = fact;
    const formerly = fact.kind === "join" ? fact.formerly : undefined;
    // A rename keeps the UUID: the one known under the former name is the player's.
    let uuid = this.state.names[name] ?? (formerly ? this.state.names[formerly] : undefined);
    if (!uuid && proxy) uuid = await this.proxyUuid(name, proxy);
    else if (!uuid) {
      // The "UUID of player" line was before our window (or the server is offline-mode): ask the server.
      if (!("map" in listed)) listed.map = await this.onlineUuids();
      uuid = listed.map?.get(name);
    }
    if (!uuid) {
      this.log.warn("join_without_uuid", { name });
      return null;
    }
    this.state.names[name] = uuid;
    const since = this.joinedAt.get(uuid);
    const sameLogin =
      this.state.online[uuid] !== undefined && since !== undefined && at.getTime() - since <= SAME_LOGIN_MS;
    this.state.online[uuid] = name;
    if (fact.kind === "join" && fact.address) this.connection.set(uuid, fact.address);
    if (sameLogin) return null;
    this.joinedAt.set(uuid, at.getTime());
    if (fact.kind === "server") this.log.debug("player_server", { name, server: fact.server });
    return { event_id: id, type: "join", uuid, name, at: at.toISOString() };
  }

  private left(fact: Extract<LogFact, { kind: "leave" }>, at: Date, id: string): QueuedEvent | null {
    // A leave for a player not online is the second line of a leave already sent, or of a join never seen.
    const uuid = this.uuidOnline(fact.name);
    if (!uuid) return null;
    // Velocity: a leave of an older connection of a player connected again (kick-existing-players).
    const current = this.connection.get(uuid);
    if (fact.address && current && fact.address !== current) return null;
    delete this.state.online[uuid];
    this.joinedAt.delete(uuid);
    this.connection.delete(uuid);
    return { event_id: id, type: "leave", uuid, name: fact.name, at: at.toISOString() };
  }

  /** Offline mode: derived from the name; online mode: asked of the profile API, and remembered (state.names). */
  private async proxyUuid(name: string, proxy: ProxyKind): Promise<string | undefined> {
    this.onlineMode[proxy] ??= proxyOnlineMode(this.config.serverDir, proxy);
    if (!this.onlineMode[proxy]) return offlineUuid(name);
    if (!this.config.profileUrl) return undefined;
    const found = await lookupUuid(this.config.profileUrl, name, this.config.requestTimeoutMs);
    if (found === "unavailable") this.log.warn("profile_lookup_failed", { name, url: this.config.profileUrl });
    return found === "unavailable" || found === null ? undefined : found;
  }

  private async onlineUuids(): Promise<Map<string, string> | null> {
    try {
      const list = parseList(await this.rcon.run("list uuids"));
      if (!list) return null;
      return new Map(list.players.filter((p) => p.uuid).map((p) => [p.name, p.uuid!]));
    } catch {
      return null;
    }
  }

  /** After a start: a leave for whoever we thought online and is not, a join for whoever is online and we did not know. */
  private async reconcile(): Promise<QueuedEvent[]> {
    const online = await this.onlineUuids();
    if (!online) return [];
    this.reconciled = true;
    const events: QueuedEvent[] = [];
    const now = new Date().toISOString();
    const nowUuids = new Set(online.values());
    for (const [uuid, name] of Object.entries(this.state.online)) {
      if (nowUuids.has(uuid)) continue;
      delete this.state.online[uuid];
      events.push({ event_id: this.nextId("rec"), type: "leave", uuid, name, at: now });
    }
    for (const [name, uuid] of online) {
      this.state.names[name] = uuid;
      if (this.state.online[uuid]) continue;
      this.state.online[uuid] = name;
      events.push({ event_id: this.nextId("rec"), type: "join", uuid, name, at: now });
    }
    if (events.length)
      this.log.info("players_reconciled", {
        joins: events.filter((e) => e.type === "join").length,
        leaves: events.filter((e) => e.type === "leave").length,
      });
    return events;
  }

  private readBans(): QueuedEvent[] {
    if (!this.config.serverDir) return [];
    const path = join(this.config.serverDir, "banned-players.json");
    let stamp = "missing";
    try {
      const st = statSync(path);
      stamp = `${st.mtimeMs}:${st.size}:${st.ino}`;
    } catch {}
    if (stamp === this.bansStamp) return [];
    let list: BanEntry[] = [];
    if (stamp !== "missing") {
      try {
        list = JSON.parse(readFileSync(path, "utf8"));
        if (!Array.isArray(list)) throw new Error("not an array");
      } catch (e) {
        // Probably caught mid-write; the next tick reads it again.
        this.log.debug("bans_unreadable", { error: errorText(e) });
        return [];
      }
    }
    this.bansStamp = stamp;
    const current: Record<string, BanEntry> = {};
    for (const b of list) if (b && typeof b.uuid === "string" && isUuid(b.uuid)) current[b.uuid.toLowerCase()] = b;
    const previous = this.state.bans ?? {};
    this.state.bans = current;
    const events: QueuedEvent[] = [];
    const suppressed = (uuid: string) => {
      const i = this.state.suppress.indexOf(uuid);
      if (i >= 0) this.state.suppress.splice(i, 1);
      return i >= 0;
    };
    for (const [uuid, b] of Object.entries(current)) {
      if (previous[uuid] || suppressed(uuid)) continue;
      if (!isPlayerName(b.name ?? "")) continue;
      const expires = b.expires && b.expires !== "forever" ? banDate(b.expires) : undefined;
      events.push({
        event_id: `ban.${uuid}.${idPart(b.created ?? this.nextId("t"))}`.slice(0, 100),
        type: "ban",
        uuid,
        name: b.name,
        ...(b.reason ? { reason: b.reason.slice(0, 500) } : {}),
        ...(b.source ? { source: b.source.slice(0, 100) } : {}),
        expires: expires ?? null,
        ...(banDate(b.created) ? { at: banDate(b.created) } : {}),
      });
    }
    for (const [uuid, b] of Object.entries(previous)) {
      if (current[uuid] || suppressed(uuid)) continue;
      events.push({
        event_id: `unban.${uuid}.${idPart(b.created ?? this.nextId("t"))}`.slice(0, 100),
        type: "unban",
        uuid,
      });
    }
    return events;
  }

  private async sendLoop() {
    let attempt = 0;
    while (this.running) {
      if (this.queue.pendingBytes === 0) {
        await new Promise<void>((resolve) => {
          this.wake = resolve;
          setTimeout(resolve, 1000);
        });
        this.wake = null;
        continue;
      }
      const result = await this.sendOnce();
      if (result === "sent") {
        attempt = 0;
        continue;
      }
      const wait =
        typeof result === "number" ? result : backoffMs(attempt++, this.config.backoffMinMs, this.config.backoffMaxMs);
      await new Promise<void>((resolve) => {
        this.wake = resolve;
        setTimeout(resolve, wait);
      });
      this.wake = null;
    }
  }

  /** One batch, oldest first. "sent" when acknowledged (or set aside as rejected), otherwise a hint for the wait. */
  private async sendOnce(): Promise<"sent" | "retry" | number> {
    const { events, end } = this.queue.peek(BATCH_EVENTS, BATCH_BYTES);
    if (!events.length) return "sent";
    const res = await this.api.request("POST", "/agent/events", { events });
    if (res.status === 200) {
      this.queue.ack(end);
      if (this.serviceDown) this.log.info("service_back", { delivered: events.length });
      this.serviceDown = false;
      this.log.debug("events_sent", { accepted: res.body?.accepted, duplicates: res.body?.duplicates });
      return "sent";
    }
    if (res.status === 400) {
      // Retrying an invalid batch unchanged can never succeed; keep it on disk for a person to read.
      appendFileSync(
        join(this.config.stateDir, "rejected.jsonl"),
        `${JSON.stringify({ events, error: res.body?.error })}\n`,
      );
      this.queue.ack(end);
      this.log.error("events_rejected", {
        count: events.length,
        error: res.body?.error?.message,
        file: "rejected.jsonl",
      });
      return "sent";
    }
    if (!this.serviceDown || res.status === 401) {
      this.log.warn(res.status === 401 ? "token_refused" : "service_unreachable", {
        status: res.status,
        error: res.body?.error?.message,
        queued_bytes: this.queue.pendingBytes,
      });
    }
    this.serviceDown = true;
    return res.status === 429 && res.retryAfterMs ? res.retryAfterMs : "retry";
  }

  async heartbeat() {
    const body: Record<string, number> = {};
    try {
      const list = parseList(await this.rcon.run("list"));
      if (list) body.players_online = list.online;
      Object.assign(body, await this.tickFigures());
      if (this.version === null) this.version = parseVersionCommand(await this.rcon.run("version")) ?? "";
    } catch {}
    Object.assign(body, this.memory());
    const res = await this.api.request("POST", "/agent/heartbeat", body);
    if (res.status !== 200) this.log.debug("heartbeat_failed", { status: res.status });
  }

  /** Paper's tps/mspt, else vanilla's tick query; when neither answers, nothing. */
  private async tickFigures(): Promise<{ tps?: number; mspt?: number }> {
    if (this.tickMode !== "vanilla") {
      const tps = parsePaperTps(await this.rcon.run("tps"));
      if (tps !== null) {
        this.tickMode = "paper";
        const mspt = parsePaperMspt(await this.rcon.run("mspt"));
        return mspt === null ? { tps } : { tps, mspt };
      }
    }
    const q = parseTickQuery(await this.rcon.run("tick query"));
    if (q) this.tickMode = "vanilla";
    return q ?? {};
  }

  private memory(): { memory_used_mb?: number; memory_max_mb?: number } {
    if (process.platform !== "linux") return {};
    for (let tries = 0; tries < 2; tries++) {
      this.serverPid ??= this.findServerPid();
      if (this.serverPid === null) return {};
      try {
        const status = readFileSync(`/proc/${this.serverPid}/status`, "utf8");
        const rss = status.match(/VmRSS:\s+(\d+) kB/);
        const cmdline = readFileSync(`/proc/${this.serverPid}/cmdline`, "utf8").split("\0");
        const out: { memory_used_mb?: number; memory_max_mb?: number } = {};
        if (rss) out.memory_used_mb = Math.round(Number(rss[1]) / 1024);
        const max = parseXmx(cmdline);
        if (max !== null) out.memory_max_mb = max;
        return out;
      } catch {
        if (this.config.serverPid !== null) return {};
        this.serverPid = null; // the server restarted: look for it again
      }
    }
    return {};
  }

  /** A java process whose working directory is the server's directory. */
  private findServerPid(): number | null {
    if (!this.config.serverDir || !existsSync("/proc")) return null;
    const dir = realpathSync(this.config.serverDir);
    for (const entry of readdirSync("/proc")) {
      if (!/^\d+$/.test(entry)) continue;
      try {
        if (readlinkSync(`/proc/${entry}/cwd`) !== dir) continue;
        if (!readFileSync(`/proc/${entry}/cmdline`, "utf8").split("\0")[0]!.includes("java")) continue;
        return Number(entry);
      } catch {}
    }
    return null;
  }

  async pullConfig() {
    const res = await this.api.request(
      "GET",
      "/agent/config",
      undefined,
      this.etag ? { "if-none-match": this.etag } : {},
    );
    if (res.status === 304) return;
    if (res.status !== 200) {
      this.log.debug("config_failed", { status: res.status });
      return;
    }
    this.etag = res.etag;
    const { generated_at: _, ...content } = res.body;
    const h = hash(content);
    const changed = h !== this.configHash;
    const ok = await this.applyConfig(res.body, changed);
    if (ok) this.configHash = h;
    this.log.debug("config_pulled", { changed, opt_outs: this.state.optOuts.length });
  }

  /** A joining player banned by UUID only (./agent.ts `bansByUuid`): banned now, by the name the join gave. */
  private async banOnJoin(events: QueuedEvent[]) {
    for (const e of events) {
      const pending = e.type === "join" && e.uuid ? this.state.bansByUuid[e.uuid] : undefined;
      if (!pending || !e.uuid || !e.name || !isPlayerName(e.name)) continue;
      remember(this.state.suppress, e.uuid);
      try {
        await this.rcon.run(`ban ${e.name}${pending.reason ? ` ${pending.reason}` : ""}`);
        this.log.info("ban_applied", { uuid: e.uuid, name: e.name, on: "join" });
        remember(this.state.appliedBans, pending.key);
        delete this.state.bansByUuid[e.uuid];
      } catch (err) {
        this.state.suppress = this.state.suppress.filter((u) => u !== e.uuid);
        this.log.warn("ban_not_applied", { uuid: e.uuid, error: errorText(err) });
      }
    }
  }

  /** True when everything applied; bans and pardons that failed are tried again on the next pull. */
  private async applyConfig(cfg: RemoteConfig, changed: boolean): Promise<boolean> {
    let ok = true;
    this.state.optOuts = (cfg.opt_outs ?? []).map((u) => String(u).toLowerCase());
    const banned = this.state.bans ?? {};
    const byUuid: AgentState["bansByUuid"] = {};
    for (const b of cfg.bans ?? []) {
      const key = `${b.uuid}|${b.created}`;
      if (this.state.appliedBans.includes(key)) continue;
      if (!banned[b.uuid]) {
        if (!isPlayerName(b.name)) {
          // No name to ban by (an erased player's ban): applied at their next join.
          const reason = b.reason && b.reason !== "(erased)" ? String(b.reason).replace(/[\r\n]+/g, " ") : undefined;
          byUuid[b.uuid] = { key, ...(reason && { reason }) };
          continue;
        }
        remember(this.state.suppress, b.uuid);
        try {
          await this.rcon.run(`ban ${b.name}${b.reason ? ` ${String(b.reason).replace(/[\r\n]+/g, " ")}` : ""}`);
          this.log.info("ban_applied", { uuid: b.uuid, name: b.name });
        } catch (e) {
          this.state.suppress = this.state.suppress.filter((u) => u !== b.uuid);
          ok = false;
          this.log.warn("ban_not_applied", { uuid: b.uuid, error: errorText(e) });
          continue;
        }
      }
      remember(this.state.appliedBans, key);
    }
    this.state.bansByUuid = byUuid;
    for (const p of cfg.pardons ?? []) {
      const key = `${p.uuid}|${p.lifted_at}`;
      if (this.state.appliedPardons.includes(key)) continue;
      const entry = banned[p.uuid];
      if (entry) {
        remember(this.state.suppress, p.uuid);
        try {
          await this.rcon.run(`pardon ${entry.name}`);
          this.log.info("pardon_applied", { uuid: p.uuid, name: entry.name });
        } catch (e) {
          this.state.suppress = this.state.suppress.filter((u) => u !== p.uuid);
          ok = false;
          this.log.warn("pardon_not_applied", { uuid: p.uuid, error: errorText(e) });
          continue;
        }
      }
      remember(this.state.appliedPardons, key);
    }
    // A kick is one act: run once, whether or not the player is online (the game answers that).
    for (const k of cfg.kicks ?? []) {
      if (this.state.appliedKicks.includes(k.kick_id)) continue;
      if (isPlayerName(k.name)) {
        try {
          const reason = String(k.reason ?? "").replace(/[\r\n]+/g, " ");
          await this.rcon.run(`kick ${k.name}${reason ? ` ${reason}` : ""}`);
          this.log.info("kick_applied", { kick_id: k.kick_id, name: k.name });
        } catch (e) {
          ok = false;
          this.log.warn("kick_not_applied", { kick_id: k.kick_id, error: errorText(e) });
          continue;
        }
      }
      remember(this.state.appliedKicks, k.kick_id);
    }
    this.scheduleAnnouncements(cfg.announcements ?? []);
    if (changed) ok = (await this.applyRanks(cfg.ranks ?? [])) && ok;
    this.save();
    return ok;
  }

  private scheduleAnnouncements(list: Announcement[]) {
    const wanted = new Map<string, Announcement>(list.map((a) => [a.announcement_id, a]));
    for (const [id, job] of this.announcements) {
      const a = wanted.get(id);
      if (!a || job.key !== hash(a)) {
        job.stop();
        this.announcements.delete(id);
      }
    }
    for (const a of list) {
      if (this.announcements.has(a.announcement_id)) continue;
      const send = () => {
        this.rcon
          .run(tellraw(a.message))
          .then(() => this.log.info("announcement_sent", { announcement_id: a.announcement_id }))
          .catch((e) =>
            this.log.warn("announcement_failed", { announcement_id: a.announcement_id, error: errorText(e) }),
          );
      };
      let stop: () => void;
      if (a.schedule) {
        const job = new Cron(a.schedule, { timezone: "UTC" }, send);
        stop = () => job.stop();
      } else if (a.interval_seconds) {
        const t = setInterval(send, a.interval_seconds * 1000);
        stop = () => clearInterval(t);
      } else continue;
      this.announcements.set(a.announcement_id, { key: hash(a), stop });
    }
  }

  /** Ranks as LuckPerms groups, when LuckPerms answers; otherwise said once in the log. */
  private async applyRanks(ranks: Rank[]): Promise<boolean> {
    if (!ranks.length && !this.state.ranksCreated.length) return true;
    if (this.luckPerms === null) {
      try {
        this.luckPerms = /luckperms/i.test(await this.rcon.run("lp info"));
      } catch {
        return false;
      }
    }
    if (!this.luckPerms) {
      const key = hash(ranks);
      if (this.warnedRanks !== key)
        this.log.warn("ranks_unsupported", {
          ranks: ranks.length,
          detail: "LuckPerms did not answer 'lp info' over RCON; ranks are not applied on this server",
        });
      this.warnedRanks = key;
      return true;
    }
    const q = (s: string) => `"${s.replace(/\\/g, "\\\\").replace(/"/g, '\\"')}"`;
    try {
      for (const r of ranks) {
        const h = hash(r);
        if (this.state.rankHashes[r.name] === h) continue;
        const g = `lp group ${r.name}`;
        const commands = [
          `lp creategroup ${r.name}`,
          `${g} permission clear`,
          `${g} meta clear`,
          `${g} setweight ${r.weight}`,
        ];
        if (r.display_name) commands.push(`${g} setdisplayname ${q(r.display_name)}`);
        if (r.prefix) commands.push(`${g} meta setprefix ${r.weight} ${q(r.prefix)}`);
        if (r.suffix) commands.push(`${g} meta setsuffix ${r.weight} ${q(r.suffix)}`);
        for (const p of r.permissions)
          commands.push(
            p.startsWith("-") ? `${g} permission set ${p.slice(1)} false` : `${g} permission set ${p} true`,
          );
        for (const parent of r.parents) commands.push(`${g} parent add ${parent}`);
        for (const c of commands) await this.rcon.run(c);
        this.state.rankHashes[r.name] = h;
        if (!this.state.ranksCreated.includes(r.name)) this.state.ranksCreated.push(r.name);
      }
      const names = new Set(ranks.map((r) => r.name));
      for (const name of [...this.state.ranksCreated]) {
        if (names.has(name)) continue;
        await this.rcon.run(`lp deletegroup ${name}`);
        this.state.ranksCreated = this.state.ranksCreated.filter((n) => n !== name);
        delete this.state.rankHashes[name];
      }
      this.log.info("ranks_applied", { ranks: ranks.length });
      return true;
    } catch (e) {
      this.log.warn("ranks_not_applied", { error: errorText(e) });
      return false;
    }
  }

  /** For --check: each connection once, with what went wrong. */
  async check(): Promise<{ name: string; ok: boolean; detail: string }[]> {
    const out: { name: string; ok: boolean; detail: string }[] = [];
    const res = await this.api.request("GET", "/agent/config");
    out.push({
      name: "service",
      ok: res.status === 200,
      detail:
        res.status === 200
          ? `${this.config.url} accepts the token (server ${res.body.server_id})`
          : res.status === 0
            ? `${this.config.url} unreachable: ${res.body.error.message}`
            : `${this.config.url} answered ${res.status}: ${res.body?.error?.message ?? ""}`,
    });
    try {
      const list = parseList(await this.rcon.run("list"));
      out.push({
        name: "rcon",
        ok: true,
        detail: `${this.config.rconHost}:${this.config.rconPort} answers (${list ? `${list.online} online` : "list not understood"})`,
      });
    } catch (e) {
      out.push({ name: "rcon", ok: false, detail: `${this.config.rconHost}:${this.config.rconPort}: ${errorText(e)}` });
    }
    if (this.config.serverDir) {
      const log = this.logFile();
      out.push({ name: "log", ok: existsSync(log), detail: existsSync(log) ? `${log} readable` : `${log} not found` });
    }
    this.rcon.close();
    return out;
  }

  /** Without a server directory, `banlist players` is all there is: names, with UUIDs only for players seen joining. */
  async banlistNames(): Promise<string[] | null> {
    try {
      return parseBanlist(await this.rcon.run("banlist players"));
    } catch {
      return null;
    }
  }
}
