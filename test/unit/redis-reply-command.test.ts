import { Command } from "ioredis";
import { describe, expect, it } from "vitest";
import { commandSender } from "../../src/store/redis/reply-command.js";

/** A client that answers each command as ioredis's reply parser does, on a later microtask. */
function fakeClient(answer: (command: Command) => void, options: Record<string, unknown> = {}) {
  const sent: Command[] = [];
  const argsWhenSent: unknown[][] = [];
  const client = {
    options,
    sendCommand(command: Command) {
      sent.push(command);
      argsWhenSent.push([...command.args]);
      queueMicrotask(() => answer(command));
      return command.promise;
    },
  };
  return { sent, argsWhenSent, client: client as never };
}

describe("Redis commandSender", () => {
  it("hands the reply over as strings; the command's own promise and args keep nothing", async () => {
    const { sent, client } = fakeClient((c) => c.resolve([Buffer.from("a"), [Buffer.from("b"), 7]]));
    const send = commandSender(Command);
    await expect(send(client, "EVALSHA", ["sha", 0, "x"])).resolves.toEqual(["a", ["b", 7]]);
    await expect(sent[0]!.promise).resolves.toBeNull();
    expect(sent[0]!.args).toEqual([]);
  });

  it("rejects with the error reply and keeps the args (ioredis reports them)", async () => {
    const { sent, client } = fakeClient((c) => c.reject(new Error("NOSCRIPT No matching script")));
    const send = commandSender(Command);
    await expect(send(client, "EVALSHA", ["sha", 0])).rejects.toThrow("NOSCRIPT");
    expect(sent[0]!.args).toEqual(["sha", "0"]);
  });

  it("takes the command's promise when an ioredis never calls transformReply", async () => {
    // sendCommand's promise carries the reply and the command's reply hook is never used.
    const client = { options: {}, sendCommand: () => Promise.resolve("direct") } as never;
    await expect(commandSender(Command)(client, "GET", ["k"])).resolves.toBe("direct");
  });

  it("gives the command the options call() would: key prefix and friendly error stacks", async () => {
    const { argsWhenSent, client } = fakeClient((c) => c.resolve(Buffer.from("ok")), {
      keyPrefix: "app:",
      showFriendlyErrorStack: true,
    });
    await expect(commandSender(Command)(client, "GET", ["k"])).resolves.toBe("ok");
    expect(argsWhenSent[0]).toEqual(["app:k"]);
  });
});
