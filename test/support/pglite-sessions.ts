/**
 * Makes PGlite's one session behave, for what a node relies on, like a server of many sessions.
 * pglite-socket runs every connection's messages on PGlite's single session, one message at a time,
 * so connections share named prepared statements (a second pooled connection preparing the memory
 * search's statements fails), can interleave one another's Parse/Bind/Execute (the unnamed
 * statement is per session), and a NOTIFY is delivered to the connection that sent it, never to
 * the one that LISTENs. This relay sits between the clients and pglite-socket and:
 * - runs one connection's exchange at a time, up to the server's ReadyForQuery with no transaction
 *   open (so a transaction, too, runs whole before another connection's statements);
 * - gives each connection its own names for prepared statements;
 * - hands each NotificationResponse to the connections that LISTEN on its channel.
 * What it does not give: concurrent transactions (they run one after another), per-connection
 * settings, or advisory locks that exclude (one session holds them all).
 */
import net from 'node:net';

interface Connection {
  readonly id: number;
  readonly client: net.Socket;
  readonly server: net.Socket;
  /** Whole messages from the client waiting for this connection's turn. */
  readonly waiting: Buffer[];
  readonly channels: Set<string>;
  fromClient: Buffer;
  fromServer: Buffer;
  /** The startup message (no type byte) is still to come. */
  startup: boolean;
  closed: boolean;
}

/** Splits whole messages off the front of `buffer`: with a type byte, or (the startup message) without. */
function splitMessages(buffer: Buffer, typed: boolean): { messages: Buffer[]; rest: Buffer } {
  const messages: Buffer[] = [];
  let offset = 0;
  for (;;) {
    const header = typed ? 5 : 4;
    if (buffer.length - offset < header) break;
    const length = (typed ? 1 : 0) + buffer.readInt32BE(offset + (typed ? 1 : 0));
    if (buffer.length - offset < length) break;
    messages.push(buffer.subarray(offset, offset + length));
    offset += length;
    if (!typed) break;
  }
  return { messages, rest: buffer.subarray(offset) };
}

function cString(buffer: Buffer, at: number): { value: string; end: number } {
  const end = buffer.indexOf(0, at);
  return { value: buffer.toString('utf8', at, end), end: end + 1 };
}

function framed(type: string, body: Buffer): Buffer {
  const head = Buffer.alloc(5);
  head.write(type, 0, 'latin1');
  head.writeInt32BE(body.length + 4, 1);
  return Buffer.concat([head, body]);
}

/** The message with its prepared statement's name made this connection's own (Parse, Bind, Describe and Close of a statement). */
function ownStatementNames(message: Buffer, prefix: string): Buffer {
  const type = String.fromCharCode(message[0]!);
  const own = (name: string) => Buffer.from(name === '' ? '\0' : `${prefix}${name}\0`);
  if (type === 'P') {
    const name = cString(message, 5);
    return framed('P', Buffer.concat([own(name.value), message.subarray(name.end)]));
  }
  if (type === 'B') {
    const portal = cString(message, 5);
    const statement = cString(message, portal.end);
    return framed('B', Buffer.concat([message.subarray(5, portal.end), own(statement.value), message.subarray(statement.end)]));
  }
  if ((type === 'D' || type === 'C') && message[5] === 'S'.charCodeAt(0)) {
    const name = cString(message, 6);
    return framed(type, Buffer.concat([Buffer.from('S'), own(name.value), message.subarray(name.end)]));
  }
  return message;
}

/** LISTEN / UNLISTEN sent as a simple query (as ChannelListener does). */
function listenChange(message: Buffer): { listen: boolean; channel: string } | undefined {
  if (message[0] !== 'Q'.charCodeAt(0)) return undefined;
  const match = /^\s*(UN)?LISTEN\s+"?([A-Za-z_][A-Za-z0-9_]*)"?\s*;?\s*$/i.exec(cString(message, 5).value);
  return match ? { listen: !match[1], channel: match[2]!.toLowerCase() } : undefined;
}

/** The channel of a NotificationResponse ('A': pid, channel, payload). */
function notificationChannel(message: Buffer): string {
  return cString(message, 9).value;
}

export interface SessionRelay {
  readonly port: number;
  close(): Promise<void>;
}

/** Listens on a free local port and relays each connection to pglite-socket at `target`. */
export async function startSessionRelay(target: { host: string; port: number }): Promise<SessionRelay> {
  const connections = new Set<Connection>();
  const turns: Connection[] = [];
  let holder: Connection | undefined;
  let nextId = 1;

  const release = (connection: Connection) => {
    if (holder !== connection) return;
    holder = undefined;
    while (!holder && turns.length > 0) {
      const next = turns.shift()!;
      if (!next.closed) grant(next);
    }
  };
  const grant = (connection: Connection) => {
    holder = connection;
    const messages = connection.waiting.splice(0);
    connection.server.write(Buffer.concat(messages));
    // Terminate ends the exchange without a ReadyForQuery.
    if (messages.some((message) => message[0] === 'X'.charCodeAt(0))) release(connection);
  };
  const fromClient = (connection: Connection, data: Buffer) => {
    connection.fromClient = Buffer.concat([connection.fromClient, data]);
    const messages: Buffer[] = [];
    if (connection.startup) {
      const startup = splitMessages(connection.fromClient, false);
      if (startup.messages.length === 0) return;
      connection.startup = false;
      messages.push(...startup.messages);
      connection.fromClient = startup.rest;
    }
    const { messages: typed, rest } = splitMessages(connection.fromClient, true);
    connection.fromClient = rest;
    for (const message of typed) {
      const change = listenChange(message);
      if (change?.listen) connection.channels.add(change.channel);
      else if (change) connection.channels.delete(change.channel);
      messages.push(ownStatementNames(message, `c${connection.id}_`));
    }
    if (messages.length === 0) return;
    connection.waiting.push(...messages);
    if (holder === connection || !holder) grant(connection);
    else if (!turns.includes(connection)) turns.push(connection);
  };
  const fromServer = (connection: Connection, data: Buffer) => {
    connection.fromServer = Buffer.concat([connection.fromServer, data]);
    const { messages, rest } = splitMessages(connection.fromServer, true);
    connection.fromServer = rest;
    const mine: Buffer[] = [];
    for (const message of messages) {
      if (message[0] === 'A'.charCodeAt(0)) {
        const channel = notificationChannel(message);
        for (const other of connections) if (other.channels.has(channel) && !other.closed) other.client.write(message);
        continue;
      }
      mine.push(message);
    }
    if (mine.length > 0) connection.client.write(Buffer.concat(mine));
    // ReadyForQuery with status 'I' (no transaction open): the exchange is over, another connection may go.
    if (mine.some((message) => message[0] === 'Z'.charCodeAt(0) && message[5] === 'I'.charCodeAt(0))) release(connection);
  };

  const server = net.createServer((client) => {
    const connection: Connection = {
      id: nextId++,
      client,
      server: net.connect(target.port, target.host),
      waiting: [],
      channels: new Set(),
      fromClient: Buffer.alloc(0),
      fromServer: Buffer.alloc(0),
      startup: true,
      closed: false,
    };
    connections.add(connection);
    const close = () => {
      if (connection.closed) return;
      connection.closed = true;
      connections.delete(connection);
      client.destroy();
      connection.server.destroy();
      release(connection);
    };
    client.on('data', (data) => fromClient(connection, data));
    connection.server.on('data', (data) => fromServer(connection, data));
    for (const socket of [client, connection.server]) {
      socket.on('error', close);
      socket.on('close', close);
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    async close() {
      for (const connection of connections) {
        connection.client.destroy();
        connection.server.destroy();
      }
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
