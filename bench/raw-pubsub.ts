/**
 * Baseline for bench/realtime.ts: plain Bun.serve pub/sub. Sockets subscribe to one topic on
 * open; POST /publish broadcasts the same message shape the app sends. No auth, no actor, no
 * database, no bus: what Bun's fan-out costs by itself.
 */
import "./lib/gc-on-signal";

const port = Number(process.env.PORT ?? 0);
const server = Bun.serve({
  port,
  hostname: "127.0.0.1",
  fetch(req, srv) {
    const url = new URL(req.url);
    if (url.pathname === "/health") return new Response("ok");
    if (url.pathname.startsWith("/ws/"))
      return srv.upgrade(req, { data: undefined }) ? undefined : new Response("upgrade failed", { status: 400 });
    if (url.pathname === "/publish" && req.method === "POST") {
      return req.json().then((data) => {
        srv.publish(
          "server:bench",
          JSON.stringify({ type: "heartbeat", server_id: "bench", ts: new Date().toISOString(), data }),
        );
        return Response.json({ ok: true });
      });
    }
    return new Response("not found", { status: 404 });
  },
  websocket: {
    open(ws) {
      ws.subscribe("server:bench");
      ws.send(JSON.stringify({ type: "snapshot", server_id: "bench", ts: new Date().toISOString(), data: {} }));
    },
    message() {},
    backpressureLimit: 1024 * 1024,
    closeOnBackpressureLimit: true,
  },
});
console.log(JSON.stringify({ port: server.port }));
process.once("SIGTERM", () => {
  server.stop(true);
  process.exit(0);
});
