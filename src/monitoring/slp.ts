/**
 * The Server List Ping of a Java Edition server (the status a client's server list shows), over
 * one TCP connection: the handshake and the status request in one write, then the status answer
 * (a VarInt-framed JSON string). A few hundred bytes each way, parsed where they land: no stream
 * wrapper, no per-field promise, one timer.
 *
 * The latency is the TCP connection's round trip (the handshake's SYN to its SYN-ACK), as
 * gamedig, and so Uptime Kuma, measure it: the network's share of what a player's server list
 * shows. No ping/pong follows the status: it would time the same round trip again, at the price
 * of a third packet each way for the server and for us.
 *
 * The protocol (https://minecraft.wiki/w/Java_Edition_protocol/Server_List_Ping) has not changed
 * since 1.7; servers older than that (the legacy 0xFE ping) are not asked.
 */

/** The handshake's protocol version: 1.8's, as minecraft-server-util and gamedig send; a server answers with its own. */
const HANDSHAKE_PROTOCOL = 47;
/** A status answer longer than a 3-byte VarInt can frame (2 MiB) is not one. */
const MAX_PACKET = 0x1fffff;

export interface StatusAnswer {
  /** The status JSON as the server sent it (description, players, version, favicon...). */
  // biome-ignore lint/suspicious/noExplicitAny: the server's JSON, read field by field by the caller.
  json: any;
  /** The TCP connection's round trip in milliseconds (connecting, up to the connection open). */
  latencyMs: number;
}

/** A failure of the exchange; `code` as node's socket errors give it (ECONNREFUSED, ETIMEDOUT...) when there is one. */
export class PingError extends Error {
  constructor(
    message: string,
    readonly code?: string,
  ) {
    super(message);
    this.name = "PingError";
  }
}

function varIntLength(n: number): number {
  let len = 1;
  while (n >= 0x80) {
    n >>>= 7;
    len++;
  }
  return len;
}

function writeVarInt(buf: Buffer, at: number, n: number): number {
  while (n >= 0x80) {
    buf[at++] = (n & 0x7f) | 0x80;
    n >>>= 7;
  }
  buf[at++] = n;
  return at;
}

/** The handshake (next state: status) and the status request, framed, in one buffer. */
function request(host: string, port: number): Buffer {
  const hostLength = Buffer.byteLength(host);
  const body = 1 + varIntLength(HANDSHAKE_PROTOCOL) + varIntLength(hostLength) + hostLength + 2 + 1;
  const buf = Buffer.allocUnsafe(varIntLength(body) + body + 2);
  let at = writeVarInt(buf, 0, body);
  buf[at++] = 0x00; // handshake
  at = writeVarInt(buf, at, HANDSHAKE_PROTOCOL);
  at = writeVarInt(buf, at, hostLength);
  at += buf.write(host, at, "utf8");
  buf.writeUInt16BE(port, at);
  at += 2;
  buf[at++] = 0x01; // next state: status
  buf[at++] = 0x01; // status request: length 1,
  buf[at++] = 0x00; // packet 0
  return buf;
}

/**
 * A VarInt at `at`: [value, next offset], or null when the buffer ends first. Throws on one longer
 * than five bytes.
 */
function readVarInt(buf: Buffer, at: number): [number, number] | null {
  let value = 0;
  for (let i = 0; i < 5; i++) {
    if (at >= buf.length) return null;
    const b = buf[at++]!;
    value |= (b & 0x7f) << (7 * i);
    if ((b & 0x80) === 0) return [value >>> 0, at];
  }
  throw new PingError("bad answer: a VarInt longer than 5 bytes");
}

/** A whole packet at the start of `buf`: its id, where its body starts and ends; null if more is to come. */
function packet(buf: Buffer): { id: number; start: number; end: number } | null {
  const len = readVarInt(buf, 0);
  if (!len) return null;
  const [length, at] = len;
  if (length < 1 || length > MAX_PACKET) throw new PingError(`bad answer: a packet of ${length} bytes`);
  if (buf.length < at + length) return null;
  const id = readVarInt(buf, at);
  if (!id) throw new PingError("bad answer: a packet without an id");
  return { id: id[0], start: id[1], end: at + length };
}

/**
 * One status exchange with `address` (an IP address: the caller resolved and checked it) and
 * `port`. `host` is what the handshake names as the address the client connected to. Rejects
 * with a PingError: the connection's own error (code ECONNREFUSED...), ETIMEDOUT after
 * `timeoutMs` in all, or a bad answer (closed early, not a status, not JSON).
 */
export function serverListPing(
  address: string,
  port: number,
  timeoutMs: number,
  host = address,
): Promise<StatusAnswer> {
  return new Promise<StatusAnswer>((resolve, reject) => {
    let socket: Bun.Socket<undefined> | undefined;
    let settled = false;
    let buf: Buffer | null = null;
    const connecting = performance.now();
    let connected = 0;
    // biome-ignore lint/suspicious/noExplicitAny: see StatusAnswer.json.
    const finish = (err: PingError | null, json?: any, latency?: number) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (err) {
        socket?.terminate();
        reject(err);
      } else {
        socket?.end();
        resolve({ json, latencyMs: latency! });
      }
    };
    const timer = setTimeout(
      () => finish(new PingError(`timed out: no status answer within ${timeoutMs} ms`, "ETIMEDOUT")),
      timeoutMs,
    );
    const onData = (_s: Bun.Socket<undefined>, chunk: Buffer) => {
      if (settled) return;
      buf = buf ? Buffer.concat([buf, chunk]) : chunk;
      try {
        const p = packet(buf);
        if (!p) return;
        if (p.id !== 0x00) throw new PingError(`bad answer: packet ${p.id} where a status was expected`);
        const str = readVarInt(buf, p.start);
        if (!str || str[1] + str[0] > p.end) throw new PingError("bad answer: the status string overruns its packet");
        let json: unknown;
        try {
          json = JSON.parse(buf.toString("utf8", str[1], str[1] + str[0]));
        } catch {
          throw new PingError("bad answer: the status is not JSON");
        }
        if (json === null || typeof json !== "object") throw new PingError("bad answer: the status is not an object");
        finish(null, json, connected - connecting);
      } catch (err) {
        finish(err instanceof PingError ? err : new PingError(`bad answer: ${(err as Error).message}`));
      }
    };
    Bun.connect({
      hostname: address,
      port,
      socket: {
        open(s) {
          socket = s;
          if (settled) s.terminate();
          else {
            connected = performance.now();
            s.write(request(host, port));
          }
        },
        data: onData,
        close() {
          finish(new PingError("bad answer: the connection closed before a status answer"));
        },
        error(_s, err) {
          finish(socketError(err, address, port));
        },
      },
    }).then(
      (s) => {
        socket = s;
        if (settled) s.terminate();
      },
      (err) => finish(socketError(err, address, port)),
    );
  });
}

/** Node's wording for a socket error ("connect ECONNREFUSED 203.0.113.7:25565"), with its code. */
function socketError(err: unknown, address: string, port: number): PingError {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code === "string" && code !== "") {
    const syscall = (err as { syscall?: unknown }).syscall;
    return new PingError(`${typeof syscall === "string" ? syscall : "connect"} ${code} ${address}:${port}`, code);
  }
  return new PingError(err instanceof Error ? err.message : String(err));
}
