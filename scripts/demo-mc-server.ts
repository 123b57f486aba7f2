/**
 * A Minecraft status responder: answers Server List Ping like a real server (it is
 * minecraft-protocol's server), with no world behind it. For the servers guide (docs/guides/servers.md), the
 * tests and the pinger benchmark.
 *
 *   bun scripts/demo-mc-server.ts                  # 127.0.0.1:25565
 *   MC_PORT=25570 MC_MOTD="Hello" bun scripts/demo-mc-server.ts
 */
import { createServer, type Server } from "minecraft-protocol";

export interface Responder {
  port: number;
  /** What the next ping reports as players online. */
  players: number;
  /** The player list the next ping carries (vanilla sends up to 12 of those online). */
  sample: { name: string; id: string }[];
  close(): Promise<void>;
}

/**
 * Where a responder without a given port listens: below Linux's default range of ports handed out
 * to outgoing connections (32768-60999). A responder that crashes and starts again on its port (the
 * demo, the tests) would otherwise find it taken by some connection's source port meanwhile.
 */
const OWN_PORTS = { from: 20_000, to: 32_768 };

export async function startStatusResponder(
  opts: { port?: number; host?: string; motd?: string; maxPlayers?: number; version?: string; players?: number } = {},
): Promise<Responder> {
  const responder = { players: opts.players ?? 0, sample: [] } as unknown as Responder;
  const listen = async (port: number) => {
    const server: Server = createServer({
      port,
      host: opts.host ?? "127.0.0.1",
      "online-mode": false,
      motd: opts.motd ?? "A Minecraft Server",
      maxPlayers: opts.maxPlayers ?? 20,
      version: opts.version ?? "1.20.4",
      // A pinger hangs up as soon as it has its answer; the reset it leaves is not worth a line.
      hideErrors: true,
      beforePing: (response: { players: { online: number; sample: { name: string; id: string }[] } }) => {
        response.players.online = responder.players;
        response.players.sample = responder.sample;
        return response;
      },
    });
    await new Promise<void>((resolve, reject) => {
      server.once("listening", () => resolve());
      server.once("error", reject);
    });
    return server;
  };
  /** A free port of OWN_PORTS, tried at random. */
  const listenOnOwnPort = async () => {
    for (let attempt = 0; ; attempt++) {
      try {
        return await listen(OWN_PORTS.from + Math.floor(Math.random() * (OWN_PORTS.to - OWN_PORTS.from)));
      } catch (err) {
        if ((err as { code?: string }).code !== "EADDRINUSE" || attempt >= 50) throw err;
      }
    }
  };
  const listening = opts.port !== undefined ? await listen(opts.port) : await listenOnOwnPort();
  const socket = (listening as unknown as { socketServer: { address(): { port: number } } }).socketServer;
  responder.port = socket.address().port;
  responder.close = () =>
    new Promise<void>((resolve) => {
      (listening as unknown as { socketServer: { close(cb: () => void): void } }).socketServer.close(() => resolve());
      listening.close();
    });
  return responder;
}

if (import.meta.main) {
  const r = await startStatusResponder({
    port: Number(process.env.MC_PORT ?? 25565),
    host: process.env.MC_HOST ?? "127.0.0.1",
    motd: process.env.MC_MOTD ?? "mc-platform demo server",
    maxPlayers: Number(process.env.MC_MAX_PLAYERS ?? 20),
    players: Number(process.env.MC_PLAYERS ?? 3),
  });
  console.log(`Minecraft status responder on 127.0.0.1:${r.port} (Ctrl-C to stop)`);
  process.once("SIGINT", async () => {
    await r.close();
    process.exit(0);
  });
}
