import {
  closeSync,
  existsSync,
  fstatSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readFileSync,
  readSync,
  renameSync,
  writeFileSync,
  writeSync,
} from "node:fs";
import { join } from "node:path";
import type { Logger } from "./log";

/** Written to a temporary file, flushed, then renamed over the old one: a crash leaves the old or the new, never half. */
export function writeAtomic(path: string, data: string) {
  const tmp = `${path}.tmp`;
  const fd = openSync(tmp, "w");
  try {
    writeSync(fd, data);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, path);
}

export function readJson<T>(path: string): T | null {
  if (!existsSync(path)) return null;
  return JSON.parse(readFileSync(path, "utf8")) as T;
}

export interface QueuedEvent {
  event_id: string;
  type: "join" | "leave" | "ban" | "unban" | "server_stopping" | "server_started" | "crash_report";
  uuid?: string;
  name?: string;
  at?: string;
  reason?: string;
  source?: string;
  expires?: string | null;
  line?: string;
  file?: string;
  description?: string;
  lines?: string[];
}

/**
 * The events not yet acknowledged by the service, in order, on disk: an append-only JSON-lines
 * file and the byte offset up to which the service has answered 200. When everything is
 * acknowledged both start over empty, so the file only grows while the service is away.
 */
export class DiskQueue {
  private readonly file: string;
  private readonly ackFile: string;
  private acked: number;
  private size: number;
  private full = false;
  dropped = 0;

  constructor(
    dir: string,
    private readonly maxBytes: number,
    private readonly log: Logger,
  ) {
    mkdirSync(dir, { recursive: true });
    this.file = join(dir, "queue.jsonl");
    this.ackFile = join(dir, "queue.ack");
    if (!existsSync(this.file)) writeFileSync(this.file, "");
    this.size = fstatSizeOf(this.file);
    this.acked = Math.min(readJson<{ offset: number }>(this.ackFile)?.offset ?? 0, this.size);
  }

  get pendingBytes() {
    return this.size - this.acked;
  }

  /** Appends and flushes to disk before returning. Beyond the bound the newest events are dropped, with one log line per episode. */
  append(events: QueuedEvent[]) {
    if (!events.length) return;
    let data = "";
    for (const e of events) {
      const line = `${JSON.stringify(e)}\n`;
      if (this.size - this.acked + data.length + line.length > this.maxBytes) {
        this.dropped++;
        if (!this.full) {
          this.full = true;
          this.log.error("queue_full", {
            max_bytes: this.maxBytes,
            pending_bytes: this.pendingBytes,
            detail:
              "the service has been unreachable long enough to fill the on-disk queue; new events are dropped until it drains",
          });
        }
        continue;
      }
      data += line;
    }
    if (!data) return;
    const fd = openSync(this.file, "a");
    try {
      writeSync(fd, data);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    this.size += Buffer.byteLength(data);
  }

  /** The oldest unacknowledged events, at most `max` and about `maxBytes` of JSON. */
  peek(max: number, maxBytes: number): { events: QueuedEvent[]; end: number } {
    const want = Math.min(this.size - this.acked, maxBytes);
    if (want <= 0) return { events: [], end: this.acked };
    const buf = Buffer.alloc(want);
    const fd = openSync(this.file, "r");
    try {
      readSync(fd, buf, 0, want, this.acked);
    } finally {
      closeSync(fd);
    }
    const events: QueuedEvent[] = [];
    let pos = 0;
    while (events.length < max) {
      const nl = buf.indexOf(10, pos);
      if (nl < 0) break;
      events.push(JSON.parse(buf.subarray(pos, nl).toString("utf8")));
      pos = nl + 1;
    }
    // One line longer than the window: read it alone rather than stall.
    if (!events.length && want < this.size - this.acked) return this.peek(max, maxBytes * 2);
    return { events, end: this.acked + pos };
  }

  ack(end: number) {
    this.acked = end;
    if (this.acked >= this.size) {
      writeFileSync(this.file, "");
      this.size = 0;
      this.acked = 0;
    }
    writeAtomic(this.ackFile, JSON.stringify({ offset: this.acked }));
    if (this.full && this.pendingBytes < this.maxBytes / 2) {
      this.full = false;
      this.log.info("queue_draining", { dropped: this.dropped, pending_bytes: this.pendingBytes });
    }
  }
}

function fstatSizeOf(path: string) {
  const fd = openSync(path, "r");
  try {
    return fstatSync(fd).size;
  } finally {
    closeSync(fd);
  }
}
