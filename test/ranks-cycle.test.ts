import { describe, expect, test } from "bun:test";
import { findCycle } from "../src/servers/ranks";

describe("rank inheritance cycles", () => {
  test("a cycle an edit makes is reported from the edited rank, whatever order the rows came in", () => {
    // As PostgreSQL may return them: the edited rank last.
    const graph = new Map([
      ["b", ["a"]],
      ["c", ["b"]],
      ["a", ["c"]],
    ]);
    expect(findCycle(graph, "a")).toEqual(["a", "c", "b", "a"]);
    expect(findCycle(graph, "c")).toEqual(["c", "b", "a", "c"]);
  });

  test("no cycle is null, from any start", () => {
    const graph = new Map([
      ["admin", ["mod"]],
      ["mod", ["default"]],
      ["default", []],
    ]);
    expect(findCycle(graph, "default")).toBeNull();
    expect(findCycle(graph)).toBeNull();
  });
});
