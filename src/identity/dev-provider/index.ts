export { DbGrantStore } from "./db-store";
export { type GrantStore, MemoryGrantStore } from "./grants";
export { createDevProvider, type DevProvider, type DevProviderOptions } from "./handlers";
export { DEV_IDP_OUTCOMES, type DevOutcome } from "./outcomes";
export { startDevProvider } from "./server";
export { inProcessTransport } from "./in-process";
