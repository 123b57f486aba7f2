export * from "./accounts";
export * from "./teams";
export * from "./clients";
