import { createContext, useContext } from "react";

export interface Team {
  team_id: string;
  name: string;
  role: "owner" | "admin" | "viewer";
  require_two_factor?: boolean;
  /** The team requires a second factor and this account has none. */
  locked?: boolean;
}
export interface Current {
  team: Team | null;
  teams: Team[];
  email: string;
  /** The account has a second factor. */
  twoFactor: boolean;
  canWrite: boolean;
  selectTeam(id: string): void;
}
export const CurrentCtx = createContext<Current>(null as unknown as Current);
export const useCurrent = () => useContext(CurrentCtx);
