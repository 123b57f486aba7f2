/** The part of gamedig 5 (untyped) the pinger bench's baseline calls. */
declare module "gamedig" {
  export const GameDig: {
    query(options: {
      type: string;
      host: string;
      port?: number;
      socketTimeout?: number;
      attemptTimeout?: number;
      maxRetries?: number;
      givenPortOnly?: boolean;
    }): Promise<{ numplayers: number; maxplayers: number; ping: number }>;
  };
}
