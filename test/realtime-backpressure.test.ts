import { describe, expect, test } from "bun:test";
import { connect, type Socket } from "node:net";
import { startTestServer } from "./harness";
import { newServer } from "./servers-fixture";
import { WsClient } from "./ws-helpers";

/** A WebSocket client that completes the handshake and then stops reading: a slow consumer. */
async function stalledClient(
  port: number,
  path: string,
  token: string,
): Promise<{ socket: Socket; ended: Promise<number> }> {
  const socket = connect(port, "127.0.0.1");
  await new Promise<void>((resolve) => socket.once("connect", () => resolve()));
  socket.write(
    `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
      `Sec-WebSocket-Key: ${Buffer.from(crypto.getRandomValues(new Uint8Array(16))).toString("base64")}\r\nSec-WebSocket-Version: 13\r\n` +
      `Authorization: Bearer ${token}\r\n\r\n`,
  );
  let received = 0;
  let head = "";
  await new Promise<void>((resolve) => {
    const onData = (chunk: Buffer) => {
      received += chunk.length;
      head += chunk.toString("latin1");
      // Wait for the 101 and the snapshot frame, then stop reading.
      if (head.includes("HTTP/1.1 101") && head.includes('"snapshot"')) {
        socket.off("data", onData);
        socket.pause();
        resolve();
      }
    };
    socket.on("data", onData);
  });
  const ended = new Promise<number>((resolve) => {
    socket.on("data", (chunk: Buffer) => (received += chunk.length));
    socket.on("close", () => resolve(received));
  });
  return { socket, ended };
}

describe("analytics stream: backpressure", () => {
  test("a consumer that stops reading is disconnected at the limit; others keep receiving", async () => {
    const srv = await startTestServer({ WS_BACKPRESSURE_BYTES: "65536" });
    const f = await newServer(srv);
    const path = `/ws/server/${f.serverId}/analytics`;
    const slow = await stalledClient(srv.port, path, f.owner.token);
    const fast = await WsClient.connect(srv, f.serverId, { authorization: `Bearer ${f.owner.token}` });
    await fast.until("snapshot");
    expect(srv.services.realtime.actors.stats(f.serverId).subscribers).toBe(2);

    // Far more than the kernel's socket buffers plus the 64 KiB limit: 3,000 events of ~4 KiB.
    const padding = "x".repeat(4000);
    let fastGot = 0;
    const drained = (async () => {
      for (;;) {
        const m = await fast.next(5000);
        if (m.type === "heartbeat") fastGot++;
        if (fastGot === 3000) return;
      }
    })();
    for (let i = 0; i < 3000; i++) {
      srv.services.realtime.publish(f.serverId, "heartbeat", { tps: 20, seq: i, padding });
      if (i % 100 === 99) await Bun.sleep(1);
    }
    await drained;
    expect(fastGot).toBe(3000);

    // The slow one was cut off: its connection ended having received only part of the 12 MB.
    slow.socket.resume();
    const received = await Promise.race([slow.ended, Bun.sleep(5000).then(() => -1)]);
    expect(received).toBeGreaterThan(0);
    expect(received).toBeLessThan(3000 * 4000);
    expect(srv.services.realtime.actors.stats(f.serverId).subscribers).toBe(1);
    fast.close();
    slow.socket.destroy();
  }, 30_000);
});
