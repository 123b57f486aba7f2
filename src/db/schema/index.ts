export * from "./accounts";
export * from "./teams";
export * from "./clients";
export * from "./servers";
export * from "./identity";
export * from "./assertion-keys";
export * from "./webhooks";
export * from "./audit";
