import { closeSync, constants, ftruncateSync, openSync, readFileSync, unlinkSync, writeSync } from "node:fs";
import { join, resolve } from "node:path";
import { dlopen, FFIType } from "bun:ffi";
import { StartupError } from "../lib/startup";

/**
 * One process per PGlite data directory. PGlite takes no lock of its own, and two processes
 * on one directory each keep their own copy of the database in memory and overwrite each
 * other's files, so accepted writes vanish on the next start.
 */
export class DataDirLockedError extends StartupError {
  constructor(
    readonly dir: string,
    readonly holderPid: number | undefined,
  ) {
    super(
      `data directory ${dir} is in use by another process (pid ${holderPid ?? "unknown"}); ` +
        "stop it, or give this one its own DATA_DIR (several processes need DATABASE_URL)",
      { data_dir: dir, holder_pid: holderPid },
    );
    this.name = "DataDirLockedError";
  }
}

export interface DataDirLock {
  release(): void;
}

const LOCK_EX = 2;
const LOCK_NB = 4;
const LOCK_UN = 8;

type Flock = (fd: number, op: number) => number;

/**
 * flock(2) from the C library: the kernel drops the lock when the process dies, however it
 * dies, so a kill -9 leaves nothing that blocks the next start. Undefined where no C library
 * can be loaded (the pid-file fallback below then applies).
 */
const flock: Flock | undefined = (() => {
  if (process.platform === "win32") return undefined;
  const names =
    process.platform === "darwin"
      ? ["libc.dylib", "/usr/lib/libSystem.B.dylib"]
      : ["libc.so.6", `libc.musl-${process.arch === "arm64" ? "aarch64" : "x86_64"}.so.1`, "libc.so"];
  for (const name of names) {
    try {
      const lib = dlopen(name, { flock: { args: [FFIType.i32, FFIType.i32], returns: FFIType.i32 } });
      return (fd, op) => lib.symbols.flock(fd, op);
    } catch {}
  }
  return undefined;
})();

const readPid = (path: string) => {
  try {
    const pid = Number.parseInt(readFileSync(path, "utf8"), 10);
    return Number.isSafeInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
};

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
};

/**
 * Takes the data directory's lock or throws DataDirLockedError naming the holder.
 * `method` exists so the tests can reach the fallback on a system that has flock.
 */
export function lockDataDir(dataDir: string, method: "auto" | "pid-file" = "auto"): DataDirLock {
  const dir = resolve(dataDir);
  const path = join(dir, "pglite.lock");
  return flock && method === "auto" ? withFlock(flock, dir, path) : withPidFile(dir, path);
}

function withFlock(flock: Flock, dir: string, path: string): DataDirLock {
  const fd = openSync(path, constants.O_RDWR | constants.O_CREAT, 0o600);
  if (flock(fd, LOCK_EX | LOCK_NB) !== 0) {
    closeSync(fd);
    throw new DataDirLockedError(dir, readPid(path));
  }
  // The pid is only for the message a refused process prints; the lock itself is the flock.
  ftruncateSync(fd, 0);
  writeSync(fd, `${process.pid}\n`, 0);
  let held = true;
  return {
    release() {
      if (!held) return;
      held = false;
      ftruncateSync(fd, 0);
      flock(fd, LOCK_UN);
      closeSync(fd);
    },
  };
}

/** Where flock is out of reach: a pid file, taken over when its process no longer exists. */
function withPidFile(dir: string, path: string): DataDirLock {
  for (let attempt = 0; ; attempt++) {
    try {
      const fd = openSync(path, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, 0o600);
      writeSync(fd, `${process.pid}\n`);
      closeSync(fd);
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
      const pid = readPid(path);
      if (attempt > 0 || (pid !== undefined && alive(pid))) throw new DataDirLockedError(dir, pid);
      unlinkSync(path);
    }
  }
  let held = true;
  return {
    release() {
      if (!held) return;
      held = false;
      if (readPid(path) === process.pid) unlinkSync(path);
    },
  };
}
