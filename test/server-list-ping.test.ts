import { afterAll, describe, expect, test } from "bun:test";
import { createServer as netServer, type Server as NetServer, type Socket } from "node:net";
import { createServer as mcServer, type Server as McServer } from "minecraft-protocol";
import { status } from "minecraft-server-util";
import { ping } from "../src/monitoring/ping";
import { serverListPing } from "../src/monitoring/slp";

/**
 * The pinger's own Server List Ping client against real servers: minecraft-protocol's (what
 * scripts/demo-mc-server.ts runs) compared field by field with minecraft-server-util, the client it
 * replaced, and hand-written servers for what a real one rarely does (split answers, a slow
 * status, nonsense).
 */
const lan = { allowPrivate: true };
const closers: (() => void)[] = [];
afterAll(() => {
  for (const close of closers) close();
});

async function minecraft(description: unknown, extra: Record<string, unknown> = {}): Promise<number> {
  const server: McServer = mcServer({
    port: 0,
    host: "127.0.0.1",
    "online-mode": false,
    hideErrors: true,
    version: "1.20.4",
    maxPlayers: 100,
    beforePing: (r: Record<string, unknown>) => ({ ...r, description, ...extra }),
  } as never);
  await new Promise<void>((resolve) => server.once("listening", () => resolve()));
  const socket = (server as unknown as { socketServer: NetServer }).socketServer;
  closers.push(() => {
    socket.close();
    server.close();
  });
  return (socket.address() as { port: number }).port;
}

const varInt = (n: number) => {
  const out: number[] = [];
  while (n >= 0x80) {
    out.push((n & 0x7f) | 0x80);
    n >>>= 7;
  }
  out.push(n);
  return Buffer.from(out);
};
const frame = (id: number, body: Buffer) => Buffer.concat([varInt(body.length + 1), Buffer.from([id]), body]);
const statusPacket = (json: string) => {
  const s = Buffer.from(json);
  return frame(0, Buffer.concat([varInt(s.length), s]));
};

/** A TCP server that runs `on` for each connection with the bytes received so far. */
async function raw(on: (socket: Socket, received: Buffer) => unknown): Promise<number> {
  const server = netServer((socket) => {
    let got = Buffer.alloc(0);
    socket.on("error", () => {});
    socket.on("data", (d) => {
      got = Buffer.concat([got, d]);
      on(socket, got);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  closers.push(() => server.close());
  return (server.address() as { port: number }).port;
}

const STATUS = JSON.stringify({
  version: { name: "Paper 1.21.1", protocol: 767 },
  players: { online: 2, max: 50, sample: [{ name: "Notch", id: "069a79f4-44e9-4726-a5be-fca90e38aaf5" }] },
  description: { text: "§aHello ", extra: [{ text: "wörld", color: "gold", bold: true }] },
});

describe("the pinger's Server List Ping client", () => {
  test("reports what minecraft-server-util reported, for string and chat-component MOTDs, colours and styles", async () => {
    const descriptions = [
      "A Minecraft Server",
      "§aWelcome to §lSkyblock\n§r§7second line",
      { text: "" },
      { text: "Hypixel ", color: "gold", bold: true, extra: [{ text: "Network", color: "#12ab34", italic: true }] },
      { translate: "multiplayer.status", color: "red", extra: [{ text: " ✓ ünïcode", strikethrough: "true" }] },
      { text: "a\nb", obfuscated: true, underlined: true },
    ];
    for (const description of descriptions) {
      const port = await minecraft(description, { favicon: `data:image/png;base64,${"A".repeat(20000)}` });
      const before = await status("127.0.0.1", port, { timeout: 5000, enableSRV: false });
      const now = await ping("127.0.0.1", port, 5000, lan);
      expect(now).toMatchObject({
        online: true,
        playersOnline: before.players.online,
        playersMax: before.players.max,
        version: before.version.name,
        motd: before.motd.clean,
        motdRaw: before.motd.raw,
        error: null,
        reason: null,
      });
      expect(now.latencyMs).toBeGreaterThanOrEqual(0);
    }
  });

  test("an answer split into many segments", async () => {
    const answer = statusPacket(STATUS);
    const asked = new WeakSet<Socket>();
    const split = await raw(async (socket) => {
      if (asked.has(socket)) return;
      asked.add(socket);
      for (let i = 0; i < answer.length; i += 9) {
        socket.write(answer.subarray(i, i + 9));
        await Bun.sleep(2);
      }
    });
    expect(await ping("127.0.0.1", split, 5000, lan)).toMatchObject({
      online: true,
      playersOnline: 2,
      playersMax: 50,
      version: "Paper 1.21.1",
      motd: "Hello wörld",
      motdRaw: "§aHello §6§lwörld",
      sample: [{ uuid: "069a79f4-44e9-4726-a5be-fca90e38aaf5", name: "Notch" }],
    });
  });

  test("the latency is the connection's round trip, not the time the server takes over its status; no ping follows the status", async () => {
    let after: Buffer | undefined;
    let asked = false;
    const slow = await raw(async (socket, got) => {
      if (asked) {
        after = Buffer.from(got);
        return;
      }
      asked = true;
      await Bun.sleep(300);
      socket.write(statusPacket(STATUS));
    });
    const r = await ping("127.0.0.1", slow, 5000, lan);
    expect(r).toMatchObject({ online: true, playersOnline: 2, reason: null });
    expect(r.latencyMs).toBeGreaterThanOrEqual(0);
    expect(r.latencyMs!).toBeLessThan(250);
    await Bun.sleep(50);
    expect(after).toBeUndefined();
  });

  test("nonsense is a bad answer, never an exception; silence is a timeout", async () => {
    const cases: [string, (socket: Socket) => void][] = [
      ["not JSON", (s) => s.end(statusPacket("{nope"))],
      ["JSON but not an object", (s) => s.end(statusPacket("42"))],
      ["no players", (s) => s.end(statusPacket(JSON.stringify({ version: { name: "x" }, description: "" })))],
      ["no description", (s) => s.end(statusPacket(JSON.stringify({ version: { name: "x" }, players: {} })))],
      ["another packet", (s) => s.end(frame(5, Buffer.from("hello")))],
      ["a length past 2 MiB", (s) => s.end(Buffer.from([0xff, 0xff, 0xff, 0x7f]))],
      ["a VarInt of six bytes", (s) => s.end(Buffer.from([0xff, 0xff, 0xff, 0xff, 0xff, 0x01]))],
      ["a string longer than its packet", (s) => s.end(frame(0, Buffer.concat([varInt(100), Buffer.from("{}")])))],
      ["half an answer, then closed", (s) => s.end(statusPacket(STATUS).subarray(0, 20))],
    ];
    for (const [name, answer] of cases) {
      let answered = false;
      const port = await raw((socket) => {
        if (answered) return;
        answered = true;
        answer(socket);
      });
      const r = await ping("127.0.0.1", port, 5000, lan);
      expect({ name, ...r }).toMatchObject({ name, online: false, reason: "bad_answer", latencyMs: null });
      expect(r.error).toStartWith("bad answer");
    }
    const silent = await raw(() => {});
    const r = await ping("127.0.0.1", silent, 300, lan);
    expect(r).toMatchObject({ online: false, reason: "timed_out" });
    expect(r.error).toBe("timed out: no status answer within 300 ms");
  });

  test("the handshake names the address and port connected to, with protocol 47, then asks for the status", async () => {
    let seen: Buffer | undefined;
    const port = await raw((socket, got) => {
      seen ??= Buffer.from(got);
      socket.destroy();
    });
    await serverListPing("127.0.0.1", port, 5000).catch(() => {});
    const host = Buffer.from("127.0.0.1");
    const port16 = Buffer.alloc(2);
    port16.writeUInt16BE(port);
    const handshake = Buffer.concat([Buffer.from([0x00, 47, host.length]), host, port16, Buffer.from([1])]);
    expect(seen).toEqual(Buffer.concat([varInt(handshake.length), handshake, Buffer.from([1, 0])]));
  });
});
