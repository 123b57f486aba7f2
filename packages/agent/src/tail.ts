import { createHash } from "node:crypto";
import { closeSync, fstatSync, openSync, readSync, statSync } from "node:fs";

/** Where reading stopped: the file (inode and a hash of its first line) and the byte offset of the first unread line. */
export interface TailPosition {
  ino: number;
  head: string;
  offset: number;
}

export interface TailLine {
  text: string;
  /** Stable across restarts: the file's head hash and the line's byte offset. */
  id: string;
}

const CHUNK = 64 * 1024;
const MAX_PER_POLL = 4 * 1024 * 1024;

/**
 * Follows logs/latest.log by polling. A server restart renames latest.log and starts a new one
 * (a new inode): the old file is read to its end through the descriptor still open, then the
 * new one from its start. A truncated file starts over. On start-up the saved position is resumed
 * only if it is the same file, so no line is read twice; a first run starts at the end.
 */
export class LogTail {
  private fd: number | null = null;
  private ino = 0;
  private head: string | null = null;
  private pos = 0;

  constructor(
    readonly path: string,
    private saved: TailPosition | null,
  ) {}

  /** Whether the file has been found yet. */
  get opened() {
    return this.fd !== null;
  }

  get position(): TailPosition | null {
    return this.fd !== null && this.head ? { ino: this.ino, head: this.head, offset: this.pos } : this.saved;
  }

  poll(): TailLine[] {
    const lines: TailLine[] = [];
    if (this.fd === null && !this.open(false)) return lines;
    this.read(lines);
    let st: ReturnType<typeof statSync> | null = null;
    try {
      st = statSync(this.path);
    } catch {
      return lines; // moved away and not yet replaced: keep the old descriptor
    }
    if (st.ino !== this.ino) {
      this.read(lines);
      this.close();
      if (this.open(true)) this.read(lines);
    } else if (st.size < this.pos) {
      this.pos = 0;
      this.head = null;
      this.read(lines);
    }
    return lines;
  }

  close() {
    if (this.fd !== null) closeSync(this.fd);
    this.fd = null;
  }

  private open(rotated: boolean): boolean {
    try {
      this.fd = openSync(this.path, "r");
    } catch {
      return false;
    }
    const st = fstatSync(this.fd);
    this.ino = st.ino;
    this.head = this.headOf();
    const saved = this.saved;
    this.saved = null;
    if (rotated) this.pos = 0;
    else if (!saved) this.pos = this.head ? st.size : 0;
    else if (saved.ino === st.ino && saved.head === this.head && st.size >= saved.offset) this.pos = saved.offset;
    else this.pos = 0;
    return true;
  }

  private headOf(): string | null {
    const buf = Buffer.alloc(512);
    const n = readSync(this.fd!, buf, 0, buf.length, 0);
    const nl = buf.subarray(0, n).indexOf(10);
    if (nl < 0) return null;
    return createHash("sha256").update(buf.subarray(0, nl)).digest("hex").slice(0, 12);
  }

  private read(out: TailLine[]) {
    if (this.fd === null) return;
    if (!this.head) {
      this.head = this.headOf();
      if (!this.head) return;
    }
    let budget = MAX_PER_POLL;
    let carry = Buffer.alloc(0);
    while (budget > 0) {
      const buf = Buffer.alloc(CHUNK);
      const n = readSync(this.fd, buf, 0, CHUNK, this.pos + carry.length);
      if (n <= 0) break;
      budget -= n;
      const data = Buffer.concat([carry, buf.subarray(0, n)]);
      let start = 0;
      for (let nl = data.indexOf(10); nl >= 0; nl = data.indexOf(10, start)) {
        out.push({ text: data.subarray(start, nl).toString("utf8"), id: `${this.head}.${this.pos + start}` });
        start = nl + 1;
      }
      this.pos += start;
      carry = data.subarray(start);
    }
  }
}
