export * from "./accounts";
export * from "./teams";
