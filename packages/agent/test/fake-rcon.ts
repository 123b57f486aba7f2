/**
 * A stand-in Minecraft server for the agent's tests: the Source RCON protocol over TCP (login with
 * type 3, commands with type 2, answers with type 0, each packet length-prefixed, little-endian),
 * answering from a table the test controls, and recording every command it ran.
 *
 * It keeps vanilla's RconClient habits that a client has to live with: each read must hold exactly
 * one packet (a read holding two, or part of one, closes the connection), an answer longer than
 * 4096 characters goes out as several packets with the request's id, and a packet of any other
 * type is answered with "Unknown request <type>".
 */
export interface FakeRcon {
  port: number;
  password: string;
  commands: string[];
  /**
   * Answer for a command (exact text, or by its first word); unknown commands get vanilla's error.
   * A function returning null leaves the command unanswered.
   */
  answers: Map<string, string | ((command: string) => string | null)>;
  /** Connections accepted so far. */
  connections(): number;
  /** Connections the fake closed because a read was not exactly one packet. */
  refused(): number;
  /** Closes every open connection (a server restart, as the agent sees it). */
  dropAll(): void;
  stop(): void;
}

const UNKNOWN = "Unknown or incomplete command, see below for error";
/** Vanilla's chunk: 4096 Java chars (UTF-16 units) a packet. */
const CHUNK = 4096;

function packet(id: number, type: number, body: string) {
  const text = Buffer.from(body, "utf8");
  const buf = Buffer.alloc(14 + text.length);
  buf.writeInt32LE(10 + text.length, 0);
  buf.writeInt32LE(id, 4);
  buf.writeInt32LE(type, 8);
  text.copy(buf, 12);
  return buf;
}

interface Conn {
  out: Buffer[];
  authed: boolean;
}

export function startFakeRcon(password = "rcon-secret"): FakeRcon {
  const answers: FakeRcon["answers"] = new Map();
  const commands: string[] = [];
  const open = new Set<import("bun").Socket<Conn>>();
  let connections = 0;
  let refused = 0;
  // Bun writes what the socket takes and returns the count; the rest waits for drain.
  const flush = (s: import("bun").Socket<Conn>) => {
    while (s.data.out.length > 0) {
      const head = s.data.out[0]!;
      const n = s.write(head);
      if (n < head.length) {
        s.data.out[0] = head.subarray(Math.max(n, 0));
        return;
      }
      s.data.out.shift();
    }
  };
  const send = (s: import("bun").Socket<Conn>, buf: Buffer) => {
    s.data.out.push(buf);
    if (s.data.out.length === 1) flush(s);
  };
  const respond = (s: import("bun").Socket<Conn>, id: number, text: string) => {
    let i = 0;
    do {
      send(s, packet(id, 0, text.slice(i, i + CHUNK)));
      i += CHUNK;
    } while (i < text.length);
  };
  const server = Bun.listen<Conn>({
    hostname: "127.0.0.1",
    port: 0,
    socket: {
      open(s) {
        connections++;
        open.add(s);
        s.data = { out: [], authed: false };
      },
      close(s) {
        open.delete(s);
      },
      drain(s) {
        flush(s);
      },
      data(s, chunk) {
        const buf = Buffer.from(chunk);
        if (buf.length < 14 || buf.readInt32LE(0) !== buf.length - 4) {
          refused++;
          s.end();
          return;
        }
        const id = buf.readInt32LE(4);
        const type = buf.readInt32LE(8);
        const body = buf.subarray(12, buf.length - 2).toString("utf8");
        if (type === 3) {
          s.data.authed = body === password;
          send(s, packet(s.data.authed ? id : -1, 2, ""));
        } else if (type === 2 && !s.data.authed) {
          send(s, packet(-1, 2, ""));
        } else if (type === 2) {
          commands.push(body);
          const a = answers.get(body) ?? answers.get(body.split(" ")[0]!);
          const text = a === undefined ? UNKNOWN : typeof a === "function" ? a(body) : a;
          if (text !== null) respond(s, id, text);
        } else {
          respond(s, id, `Unknown request ${type.toString(16)}`);
        }
      },
    },
  });
  return {
    port: server.port,
    password,
    commands,
    answers,
    connections: () => connections,
    refused: () => refused,
    dropAll: () => {
      for (const s of open) s.end();
    },
    stop: () => server.stop(true),
  };
}
