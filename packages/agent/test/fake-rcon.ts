/**
 * A stand-in Minecraft server for the agent's tests: the Source RCON protocol over TCP (login with
 * type 3, commands with type 2, answers with type 0, each packet length-prefixed, little-endian),
 * answering from a table the test controls, and recording every command it ran.
 */
export interface FakeRcon {
  port: number;
  password: string;
  commands: string[];
  /** Answer for a command (exact text, or by its first word); unknown commands get vanilla's error. */
  answers: Map<string, string | ((command: string) => string)>;
  stop(): void;
}

const UNKNOWN = "Unknown or incomplete command, see below for error";

function packet(id: number, type: number, body: string) {
  const text = Buffer.from(body, "utf8");
  const buf = Buffer.alloc(14 + text.length);
  buf.writeInt32LE(10 + text.length, 0);
  buf.writeInt32LE(id, 4);
  buf.writeInt32LE(type, 8);
  text.copy(buf, 12);
  return buf;
}

export function startFakeRcon(password = "rcon-secret"): FakeRcon {
  const answers: FakeRcon["answers"] = new Map();
  const commands: string[] = [];
  const server = Bun.listen<{ buf: Buffer; authed: boolean }>({
    hostname: "127.0.0.1",
    port: 0,
    socket: {
      open(s) {
        s.data = { buf: Buffer.alloc(0), authed: false };
      },
      data(s, chunk) {
        s.data.buf = Buffer.concat([s.data.buf, Buffer.from(chunk)]);
        while (s.data.buf.length >= 4) {
          const len = s.data.buf.readInt32LE(0);
          if (s.data.buf.length < 4 + len) break;
          const id = s.data.buf.readInt32LE(4);
          const type = s.data.buf.readInt32LE(8);
          const body = s.data.buf.subarray(12, 4 + len - 2).toString("utf8");
          s.data.buf = s.data.buf.subarray(4 + len);
          if (type === 3) {
            s.data.authed = body === password;
            s.write(packet(s.data.authed ? id : -1, 2, ""));
          } else if (type === 2 && s.data.authed) {
            commands.push(body);
            const a = answers.get(body) ?? answers.get(body.split(" ")[0]!);
            s.write(packet(id, 0, a === undefined ? UNKNOWN : typeof a === "function" ? a(body) : a));
          }
        }
      },
    },
  });
  return { port: server.port, password, commands, answers, stop: () => server.stop(true) };
}
