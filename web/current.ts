import { createContext, useContext } from "react";

export interface Team {
  team_id: string;
  name: string;
  role: "owner" | "admin" | "viewer";
}
export interface Current {
  team: Team | null;
  teams: Team[];
  email: string;
  canWrite: boolean;
  selectTeam(id: string): void;
}
export const CurrentCtx = createContext<Current>(null as unknown as Current);
export const useCurrent = () => useContext(CurrentCtx);
