import { RCON } from "minecraft-server-util";
import type { Logger } from "./log";
import { errorText } from "./log";

/**
 * minecraft-server-util's RCON client, connected on first use and again after any failure, with
 * a deadline on every command (the library waits forever for an answer that never comes), and
 * one command in flight at a time (concurrent ones on one connection lost answers: a heartbeat's
 * `list` and a config's `lp info` together left the detection waiting).
 */
export class Rcon {
  private client: RCON | null = null;
  private connecting: Promise<RCON> | null = null;
  private up = false;
  /** Commands run one at a time: answers on one connection are matched to requests in order. */
  private last: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly host: string,
    private readonly port: number,
    private readonly password: string,
    private readonly log: Logger,
    private readonly timeoutMs = 5000,
  ) {}

  private connect(): Promise<RCON> {
    if (this.client?.isConnected && this.client.isLoggedIn) return Promise.resolve(this.client);
    this.connecting ??= (async () => {
      const client = new RCON();
      client.on("error", () => this.drop(client));
      try {
        await client.connect(this.host, this.port, { timeout: this.timeoutMs });
        await client.login(this.password, { timeout: this.timeoutMs });
      } catch (e) {
        client.close();
        throw e;
      }
      this.client = client;
      if (!this.up) this.log.info("rcon_connected", { host: this.host, port: this.port });
      this.up = true;
      return client;
    })().finally(() => {
      this.connecting = null;
    });
    return this.connecting;
  }

  private drop(client: RCON) {
    client.close();
    if (this.client === client) this.client = null;
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
    const client = await this.connect().catch((e) => {
      if (this.up) this.log.warn("rcon_down", { error: errorText(e) });
      this.up = false;
      throw e;
    });
    let timer: Timer | undefined;
    try {
      return await Promise.race([
        client.execute(command),
        new Promise<never>((_, reject) => {
          timer = setTimeout(
            () => reject(new Error(`RCON command timed out after ${this.timeoutMs} ms`)),
            this.timeoutMs,
          );
        }),
      ]);
    } catch (e) {
      this.drop(client);
      throw e;
    } finally {
      clearTimeout(timer);
    }
  }

  close() {
    if (this.client) this.drop(this.client);
  }
}
