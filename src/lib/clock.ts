/**
 * The service's notion of now. Expiry decisions read it rather than Date.now() so tests can
 * move time forward without sleeping; production never advances it.
 */
export class Clock {
  private offsetMs = 0;

  now(): number {
    return Date.now() + this.offsetMs;
  }

  date(): Date {
    return new Date(this.now());
  }

  advance(ms: number) {
    this.offsetMs += ms;
  }
}
