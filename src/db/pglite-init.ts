/**
 * Run as a child process on a first start (see `openPglite`): initdb and the migrations in a
 * process of their own, whose memory goes back to the system when it exits.
 */
import { initPgliteDir } from "./client";

await initPgliteDir(process.argv[2]!);
