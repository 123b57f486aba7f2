import { AppError } from "../lib/errors";

/** Which door a password hash or check serves: sign-ins keep a share of the slots sign-ups cannot take. */
export type PasswordWork = "signin" | "signup";

export interface PasswordGateLimits {
  /** Hashes and checks running at once. */
  slots: number;
  /** Of those, the most sign-ups may hold; the rest are kept for sign-ins. */
  signupSlots: number;
  /** Sign-ins waiting for a slot; one more is refused. */
  signinQueue: number;
  /** Sign-ups waiting for a slot; one more is refused. */
  signupQueue: number;
}

/** A full queue frees up as soon as a hash ends, well within a second at any sane cost. */
const RETRY_AFTER_SECONDS = 1;

interface Waiter {
  kind: PasswordWork;
  start: () => void;
}

/**
 * Bounds argon2id work. Each hash holds its memory cost and a core for its whole run, so without a
 * bound a burst of sign-ups queues every sign-in behind it in the runtime's thread pool. Here at
 * most `slots` run at once, sign-ups hold at most `signupSlots` of them, and each kind waits in a
 * short queue of its own: a flood of sign-ups is refused with 429 and never delays a sign-in by
 * more than the sign-ups already running.
 */
export class PasswordGate {
  private running = 0;
  private runningSignups = 0;
  private waiting: Waiter[] = [];
  private waitingSignups = 0;

  constructor(private readonly limits: PasswordGateLimits) {}

  /** Runs `work` when a slot is free for its kind; 429 with Retry-After when its queue is full. */
  async run<T>(kind: PasswordWork, work: () => Promise<T>): Promise<T> {
    if (!this.canStart(kind)) {
      const waitingOfKind = kind === "signup" ? this.waitingSignups : this.waiting.length - this.waitingSignups;
      const cap = kind === "signup" ? this.limits.signupQueue : this.limits.signinQueue;
      if (waitingOfKind >= cap) throw busy(kind);
      await new Promise<void>((start) => {
        this.waiting.push({ kind, start });
        if (kind === "signup") this.waitingSignups++;
      });
    } else this.take(kind);
    try {
      return await work();
    } finally {
      this.running--;
      if (kind === "signup") this.runningSignups--;
      this.next();
    }
  }

  /** Running and waiting, for tests and metrics. */
  get load() {
    return {
      running: this.running,
      runningSignups: this.runningSignups,
      waiting: this.waiting.length,
      waitingSignups: this.waitingSignups,
    };
  }

  private canStart(kind: PasswordWork) {
    if (this.running >= this.limits.slots) return false;
    return kind === "signin" || this.runningSignups < this.limits.signupSlots;
  }

  private take(kind: PasswordWork) {
    this.running++;
    if (kind === "signup") this.runningSignups++;
  }

  /** The oldest waiter that may start: a sign-up waiting on its share does not hold back a sign-in behind it. */
  private next() {
    while (this.running < this.limits.slots) {
      const i = this.waiting.findIndex((w) => this.canStart(w.kind));
      if (i < 0) return;
      const [w] = this.waiting.splice(i, 1);
      if (w!.kind === "signup") this.waitingSignups--;
      this.take(w!.kind);
      w!.start();
    }
  }
}

function busy(kind: PasswordWork) {
  const what = kind === "signup" ? "sign-ups" : "sign-ins";
  return new AppError("rate_limited", `Too many ${what} in progress. Retry in ${RETRY_AFTER_SECONDS} s.`, {
    headers: { "Retry-After": String(RETRY_AFTER_SECONDS) },
    details: { retry_after: RETRY_AFTER_SECONDS },
  });
}
