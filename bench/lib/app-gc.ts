/** The app (src/main.ts) with the bench-only collection hook (./gc-on-signal.ts). */
import "./gc-on-signal";
import "../../src/main";
