/**
 * The demo's simulated world, as plain data: who plays where and when over the last weeks, and
 * what each server's agent would have measured. Pure and seeded (the same seed and `now` give
 * the same world); scripts/demo.ts sends it to the service through the agent protocol.
 */
import { offlineUuid } from "../src/identity/protocol";

const MIN = 60_000;
const HOUR = 60 * MIN;
const DAY = 24 * HOUR;

/** A small, fast, seeded generator (mulberry32): the world is the same for the same seed. */
export function random(seed: number) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    next,
    between: (lo: number, hi: number) => lo + next() * (hi - lo),
    int: (lo: number, hi: number) => Math.floor(lo + next() * (hi - lo + 1)),
    pick: <T>(xs: readonly T[]) => xs[Math.floor(next() * xs.length)]!,
    chance: (p: number) => next() < p,
  };
}
export type Random = ReturnType<typeof random>;

export interface ServerSpec {
  key: string;
  name: string;
  kind: "single" | "network";
  network_name?: string;
  motd: string;
  maxPlayers: number;
  memoryMaxMb: number;
  /** MSPT with nobody online, and what each player adds. */
  msptBase: number;
  msptPerPlayer: number;
  /** Casual players online at the busiest hour, besides the regulars. */
  visitors: number;
}

export const NETWORK = "Blockworks";
export const SERVERS: ServerSpec[] = [
  {
    key: "lobby",
    name: "Lobby",
    kind: "network",
    network_name: NETWORK,
    motd: "§6§lBlockworks Network §r§7· §apick a game",
    maxPlayers: 200,
    memoryMaxMb: 3072,
    msptBase: 4,
    msptPerPlayer: 0.35,
    visitors: 9,
  },
  {
    key: "survival",
    name: "Survival",
    kind: "network",
    network_name: NETWORK,
    motd: "§2Blockworks Survival §7· §eseason 4",
    maxPlayers: 80,
    memoryMaxMb: 8192,
    msptBase: 11,
    msptPerPlayer: 1.6,
    visitors: 20,
  },
  {
    key: "bedwars",
    name: "BedWars",
    kind: "network",
    network_name: NETWORK,
    motd: "Blockworks BedWars · 4v4",
    maxPlayers: 64,
    memoryMaxMb: 6144,
    msptBase: 8,
    msptPerPlayer: 1.9,
    visitors: 15,
  },
  {
    key: "creative",
    name: "Creative Plots",
    kind: "single",
    motd: "Creative Plots · build anything",
    maxPlayers: 50,
    memoryMaxMb: 4096,
    msptBase: 6,
    msptPerPlayer: 0.9,
    visitors: 6,
  },
];

export interface Player {
  name: string;
  uuid: string;
  /** How often they play, 0..1. */
  keen: number;
  /** Where a network player goes after the lobby: Survival or BedWars. */
  likes: "survival" | "bedwars";
}

const FIRST = [
  "Ender",
  "Creeper",
  "Pixel",
  "Redstone",
  "Diamond",
  "Nether",
  "Block",
  "Sky",
  "Iron",
  "Lava",
  "Frost",
  "Moss",
];
const LAST = [
  "Miner",
  "Knight",
  "Fox",
  "Wizard",
  "Builder",
  "Slayer",
  "Panda",
  "Ninja",
  "Crafter",
  "Ghost",
  "Bee",
  "Wolf",
];

/** A small stable hash of a name (FNV-1a, 32 bits). */
function hashOf(name: string): number {
  let h = 0x811c9dc5;
  for (const c of name) h = Math.imul(h ^ c.charCodeAt(0), 0x01000193) >>> 0;
  return h;
}

/** A Floodgate UUID: `00000000-0000-0000-0009-` and 12 hex digits of an Xbox user id (here made from the name). */
function floodgateUuid(name: string): string {
  const xuid = (BigInt(hashOf(name)) * 65_537n + 0x9_0000_0000n).toString(16).padStart(12, "0").slice(-12);
  return `00000000-0000-0000-0009-${xuid}`;
}

/** `count` distinct player names (Minecraft's 3-16 letters, digits and underscores) and their offline UUIDs. */
export function makePlayers(rng: Random, count: number): Player[] {
  const seen = new Set<string>();
  const out: Player[] = [];
  while (out.length < count) {
    const name = `${rng.pick(FIRST)}${rng.pick(LAST)}${rng.chance(0.5) ? rng.int(1, 99) : ""}`.slice(0, 16);
    if (seen.has(name)) continue;
    seen.add(name);
    // About one player in six comes from Bedrock through Floodgate: its "." name prefix and its
    // UUID form (zeros, then 0009 and the Xbox user id), decided by the name so the draws stay as they were.
    const bedrock = hashOf(name) % 6 === 0;
    out.push({
      name: bedrock ? `.${name}`.slice(0, 16) : name,
      uuid: bedrock ? floodgateUuid(name) : offlineUuid(name),
      keen: rng.between(0.15, 1),
      likes: rng.chance(0.6) ? "survival" : "bedwars",
    });
  }
  return out;
}

/**
 * How busy the servers are at a moment, 0..1: a daily curve peaking at 20:00 UTC and at about a
 * third of that in the morning, a third more from Friday to Sunday than on weekdays.
 */
export function activity(at: number): number {
  const d = new Date(at);
  const hour = d.getUTCHours() + d.getUTCMinutes() / 60;
  const daily = 0.65 + 0.35 * Math.cos((2 * Math.PI * (hour - 20)) / 24);
  return daily * ([0, 5, 6].includes(d.getUTCDay()) ? 1 : 0.75);
}

export interface Session {
  server: string;
  player: Player;
  start: number;
  /** When they leave; null while they are still online at `now`. */
  end: number | null;
  /** When they mean to leave: `end`, or for an open session a time after `now`. */
  planned: number;
}

/** An outage in the past: no readings and nobody online from `start` to `end`. */
export interface Outage {
  server: string;
  start: number;
  end: number;
}

/** A session start sampled from the daily curve: a busy hour is likelier. */
function startTime(rng: Random, dayStart: number) {
  for (;;) {
    const at = dayStart + rng.next() * DAY;
    if (rng.next() < activity(at)) return at;
  }
}

/**
 * Sessions over `days` days before `now`. A network player often starts in the lobby for a few
 * minutes (others reconnect straight to their game), then plays on the game server they like;
 * standalone players only play there. A session an
 * outage interrupts ends when the outage starts; one still under way at `now` stays open.
 */
export function makeHistory(
  rng: Random,
  now: number,
  days: number,
  network: Player[],
  standalone: Player[],
  outages: Outage[],
) {
  const sessions: Session[] = [];
  const from = now - days * DAY;
  const add = (server: string, player: Player, start: number, end: number) => {
    const cut = outages.find((o) => o.server === server && start < o.end && end > o.start);
    if (cut && start >= cut.start) return;
    const stop = cut ? cut.start : end;
    sessions.push({ server, player, start, end: stop > now ? null : stop, planned: stop });
  };
  for (let day = from - (from % DAY); day < now; day += DAY) {
    const weekend = [0, 5, 6].includes(new Date(day).getUTCDay()) ? 1.4 : 1;
    for (const p of network) {
      const n = rng.chance(p.keen * 0.6 * weekend) ? 1 : 0;
      for (let i = 0; i < n; i++) {
        const start = startTime(rng, day);
        if (start < from || start >= now) continue;
        const viaLobby = rng.chance(0.45);
        const lobbyEnd = viaLobby ? start + rng.between(1, 6) * MIN : start;
        if (viaLobby) add("lobby", p, start, lobbyEnd);
        add(p.likes, p, lobbyEnd + 2000, lobbyEnd + rng.between(15, 150) * MIN);
      }
    }
    for (const p of standalone) {
      const n = rng.chance(p.keen * 0.6 * weekend) ? 1 : 0;
      for (let i = 0; i < n; i++) {
        const start = startTime(rng, day);
        if (start < from || start >= now) continue;
        add("creative", p, start, start + rng.between(20, 180) * MIN);
      }
    }
  }
  return oneAtATime(sessions);
}

/** A player is on one server of a network (or the standalone) at a time: a later overlapping session is dropped. */
function oneAtATime(sessions: Session[]) {
  sessions.sort((a, b) => a.start - b.start);
  const busyUntil = new Map<string, number>();
  const group = (server: string) => SERVERS.find((s) => s.key === server)?.network_name ?? server;
  return sessions.filter((s) => {
    const key = `${group(s.server)}|${s.player.uuid}`;
    if ((busyUntil.get(key) ?? 0) > s.start) return false;
    busyUntil.set(key, s.planned);
    return true;
  });
}

/** How long a casual visit lasts, on average. */
const CASUAL_MINUTES = 45;

/**
 * The casual players of the last `hours` (and the visits still going on then): they arrive so that
 * about `visitors` x activity are online, and stay 15 to 75 minutes. Regulars alone make a quiet
 * server; these make it look like one with a few hundred players, at the cost of a few hundred
 * events instead of tens of thousands. Older history counts them in the readings only
 * (`playersAt`).
 */
export function makeCasuals(
  rng: Random,
  now: number,
  hours: number,
  network: Player[],
  standalone: Player[],
  taken: Session[],
) {
  const sessions: Session[] = [];
  for (const spec of SERVERS) {
    const pool = spec.kind === "single" ? standalone : network;
    for (let t = now - hours * HOUR - 75 * MIN; t < now; t += MIN) {
      if (!rng.chance((spec.visitors * activity(t)) / CASUAL_MINUTES)) continue;
      const planned = t + rng.between(15, 75) * MIN;
      sessions.push({
        server: spec.key,
        player: rng.pick(pool),
        start: t,
        end: planned > now ? null : planned,
        planned,
      });
    }
  }
  const all = oneAtATime([...taken, ...sessions]);
  return sessions.filter((s) => all.includes(s));
}

export interface Reading {
  tps: number;
  mspt: number;
  players_online: number;
  memory_used_mb: number;
  memory_max_mb: number;
}

/**
 * What the agent measures with `players` online: MSPT grows with the players (and now and then
 * a lag spike); TPS is 20 until a tick takes more than 50 ms; memory climbs with the load and
 * saws down at each collection.
 */
export function reading(rng: Random, spec: ServerSpec, players: number, at: number): Reading {
  let mspt = spec.msptBase + spec.msptPerPlayer * players * rng.between(0.85, 1.15);
  if (rng.chance(0.02)) mspt *= rng.between(1.8, 3);
  const tps = mspt <= 50 ? Math.min(20, 20 - rng.between(0, 0.08)) : 1000 / mspt;
  const saw = ((at / (7 * MIN)) % 1) * 0.18;
  const used = spec.memoryMaxMb * (0.32 + 0.25 * Math.min(1, players / spec.maxPlayers) + saw);
  return {
    tps: Math.round(tps * 100) / 100,
    mspt: Math.round(mspt * 10) / 10,
    players_online: players,
    memory_used_mb: Math.round(used),
    memory_max_mb: spec.memoryMaxMb,
  };
}

/**
 * Players online on a server at `at`, for a reading: counted from the sessions since `exactFrom`
 * (regulars and casuals, every one of them joined by an event); before it, the regulars' sessions
 * and the casuals the curve expects there, give or take a fifth.
 */
export function playersAt(
  rng: Random,
  spec: ServerSpec,
  world: { regulars: Session[]; casuals: Session[] },
  at: number,
  exactFrom: number,
) {
  const regulars = onlineAt(world.regulars, spec.key, at);
  if (at >= exactFrom) return regulars + onlineAt(world.casuals, spec.key, at);
  return regulars + Math.max(0, Math.round(spec.visitors * activity(at) * rng.between(0.8, 1.2)));
}

/** Players with a session on `server` at `at`. */
export function onlineAt(sessions: Session[], server: string, at: number) {
  let n = 0;
  for (const s of sessions) if (s.server === server && s.start <= at && (s.end === null || s.end > at)) n++;
  return n;
}

/**
 * The times the agent's backfilled readings are for: every two minutes of the last hour, every
 * 20 minutes of the last day, every three hours of the last week, every six hours before: a
 * reading in every bucket of the 30d chart and in one of every two to four of the others' (their
 * lines join the gaps), a fiftieth of a real agent's one a minute.
 */
export function readingTimes(now: number, days: number): number[] {
  const out: number[] = [];
  const step = (from: number, to: number, every: number) => {
    for (let t = from - (from % every) + every; t < to; t += every) out.push(t);
  };
  step(now - days * DAY, now - 7 * DAY, 6 * HOUR);
  step(now - 7 * DAY, now - DAY, 3 * HOUR);
  step(now - DAY, now - HOUR, 20 * MIN);
  step(now - HOUR, now - MIN, 2 * MIN);
  return out;
}
