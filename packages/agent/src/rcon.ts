import { connect, type Socket } from "node:net";
import type { Logger } from "./log";
import { errorText } from "./log";

// Packet types of the Source RCON protocol as Minecraft speaks it.
const AUTH = 3;
const AUTH_RESPONSE = 2;
const EXEC = 2;
const RESPONSE = 0;
/** Vanilla sends at most 4096 characters a packet (12 KiB in UTF-8); a length far past that is not RCON. */
const MAX_PACKET = 64 * 1024;

interface Packet {
  id: number;
  type: number;
  body: Buffer;
}

function encode(id: number, type: number, body: string) {
  const text = Buffer.from(body, "utf8");
  // Zero-filled, so the body's terminator and the empty string after it are already there.
  const buf = Buffer.alloc(14 + text.length);
  buf.writeInt32LE(10 + text.length, 0);
  buf.writeInt32LE(id, 4);
  buf.writeInt32LE(type, 8);
  text.copy(buf, 12);
  return buf;
}

interface Waiter {
  packet(p: Packet): void;
  fail(e: Error): void;
}

/**
 * One RCON connection over node:net (the agent runs on Node.js and Bun alike). Its socket gets its
 * three listeners when it opens and no more: an exchange in progress sets `waiting` rather than
 * adding listeners, so a connection that runs commands for weeks holds what it held after the first.
 *
 * Never more than one packet is in flight: vanilla's RconClient reads one packet a read and closes
 * the connection when a read holds two.
 */
class Connection {
  private readonly socket: Socket;
  private buf: Buffer = Buffer.alloc(0);
  private id = 0;
  private waiting: Waiter | null = null;
  /** Why the connection can no longer be used, once it cannot. */
  failed: Error | null = null;

  constructor(host: string, port: number) {
    this.socket = connect({ host, port });
    this.socket.setNoDelay(true);
    this.socket.on("data", (chunk: Buffer) => this.receive(chunk));
    this.socket.on("error", (e) => this.fail(e));
    this.socket.on("close", () => this.fail(new Error("RCON connection closed")));
  }

  private nextId() {
    // Positive: -1 is the server's "not logged in".
    this.id = this.id >= 0x7fffffff ? 1 : this.id + 1;
    return this.id;
  }

  private receive(chunk: Buffer) {
    this.buf = this.buf.length === 0 ? chunk : Buffer.concat([this.buf, chunk]);
    while (this.buf.length >= 4 && !this.failed) {
      const length = this.buf.readInt32LE(0);
      if (length < 10 || length > MAX_PACKET) {
        this.fail(new Error(`RCON answered with a packet of ${length} bytes; is this port RCON?`));
        return;
      }
      if (this.buf.length < 4 + length) return;
      const p = { id: this.buf.readInt32LE(4), type: this.buf.readInt32LE(8), body: this.buf.subarray(12, 2 + length) };
      this.buf = this.buf.subarray(4 + length);
      // Nobody waiting: the late answer to a command that already timed out, or a server's extra packet.
      this.waiting?.packet(p);
    }
  }

  fail(e: Error) {
    this.failed ??= e;
    this.socket.destroy();
    this.waiting?.fail(this.failed);
  }

  close() {
    this.fail(new Error("RCON connection closed"));
  }

  /**
   * Sends `request`, then hands each packet that comes back to `handle` until it settles. Any
   * failure, the deadline included, ends the connection: answers after it would be misread.
   */
  private exchange<T>(
    request: Buffer,
    timeoutMs: number,
    what: string,
    handle: (p: Packet, resolve: (v: T) => void, reject: (e: Error) => void) => void,
  ): Promise<T> {
    if (this.failed) return Promise.reject(this.failed);
    if (this.waiting) return Promise.reject(new Error("RCON exchange already in progress"));
    return new Promise<T>((resolve, reject) => {
      const settle = () => {
        clearTimeout(timer);
        this.waiting = null;
      };
      const fail = (e: Error) => {
        settle();
        this.fail(e);
        reject(e);
      };
      const timer = setTimeout(() => fail(new Error(`RCON ${what} timed out after ${timeoutMs} ms`)), timeoutMs);
      this.waiting = {
        packet: (p) =>
          handle(
            p,
            (v) => {
              settle();
              resolve(v);
            },
            fail,
          ),
        fail,
      };
      this.socket.write(request);
    });
  }

  login(password: string, timeoutMs: number) {
    const id = this.nextId();
    return this.exchange<void>(encode(id, AUTH, password), timeoutMs, "login", (p, resolve, reject) => {
      // Source servers send an empty RESPONSE first; Minecraft sends only the AUTH_RESPONSE.
      if (p.type !== AUTH_RESPONSE) return;
      if (p.id === -1) reject(new Error("Invalid RCON password"));
      else if (p.id === id) resolve();
    });
  }

  /**
   * An answer longer than 4096 characters comes as several packets with the command's id, and
   * nothing in them says which is the last. So once the first has come (the server has read the
   * command, and this packet cannot share its read), an empty RESPONSE packet follows with an id of
   * its own: the server answers it ("Unknown request 0" from Minecraft, an echo from Source) only
   * after the command's last packet.
   */
  command(command: string, timeoutMs: number) {
    const id = this.nextId();
    let marker = 0;
    const parts: Buffer[] = [];
    return this.exchange<string>(encode(id, EXEC, command), timeoutMs, "command", (p, resolve, reject) => {
      if (p.id === id) {
        parts.push(p.body);
        if (marker === 0) {
          marker = this.nextId();
          this.socket.write(encode(marker, RESPONSE, ""));
        }
      } else if (marker !== 0 && p.id === marker) {
        resolve(Buffer.concat(parts).toString("utf8"));
      } else if (p.id === -1) {
        reject(new Error("RCON refused the command: not logged in"));
      }
    });
  }
}

/**
 * The agent's RCON client: connected on first use and again after any failure, with a deadline on
 * every command and the login, and one command in flight at a time (answers on one connection are
 * told apart by id, but vanilla closes a connection that sends two packets in one read).
 */
export class Rcon {
  private conn: Connection | null = null;
  private up = false;
  /** Commands run one at a time. */
  private last: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly host: string,
    private readonly port: number,
    private readonly password: string,
    private readonly log: Logger,
    private readonly timeoutMs = 5000,
  ) {}

  private async connection() {
    if (this.conn && !this.conn.failed) return this.conn;
    this.conn = null;
    const conn = new Connection(this.host, this.port);
    try {
      await conn.login(this.password, this.timeoutMs);
    } catch (e) {
      conn.close();
      if (this.up) this.log.warn("rcon_down", { error: errorText(e) });
      this.up = false;
      throw e;
    }
    this.conn = conn;
    if (!this.up) this.log.info("rcon_connected", { host: this.host, port: this.port });
    this.up = true;
    return conn;
  }

  run(command: string): Promise<string> {
    const next = this.last.then(
      () => this.runNow(command),
      () => this.runNow(command),
    );
    this.last = next.catch(() => undefined);
    return next;
  }

  private async runNow(command: string): Promise<string> {
    const conn = await this.connection();
    try {
      return await conn.command(command, this.timeoutMs);
    } catch (e) {
      this.drop(conn);
      throw e;
    }
  }

  private drop(conn: Connection) {
    conn.close();
    if (this.conn === conn) this.conn = null;
  }

  close() {
    if (this.conn) this.drop(this.conn);
  }
}
