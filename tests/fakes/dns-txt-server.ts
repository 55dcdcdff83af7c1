import dgram from 'node:dgram';

/**
 * A DNS server on loopback answering TXT questions from a table (what a domain's zone would
 * publish), over UDP as resolvers ask: NXDOMAIN for names it does not have. Enough for Herald's DKIM
 * check and for `mailauth`'s verifier to read a published key.
 */
export interface DnsTxtServer {
  /** `127.0.0.1:<port>`, for `DNS_SERVERS`. */
  address: string;
  /** Publishes `text` at `name` (replacing what was there); `null` removes it. */
  set(name: string, text: string | null): void;
  /** The TXT records of a name, as a resolver returns them (each split in strings of at most 255). */
  lookup(name: string): string[][];
  stop(): Promise<void>;
}

function readName(msg: Buffer, offset: number): { name: string; end: number } {
  const labels: string[] = [];
  let i = offset;
  while (msg[i]! > 0) {
    labels.push(msg.subarray(i + 1, i + 1 + msg[i]!).toString('ascii'));
    i += msg[i]! + 1;
  }
  return { name: labels.join('.').toLowerCase(), end: i + 1 };
}

export async function startDnsTxtServer(): Promise<DnsTxtServer> {
  const records = new Map<string, string>();
  const socket = dgram.createSocket('udp4');
  const chunksOf = (text: string) => Array.from({ length: Math.ceil(text.length / 255) || 1 }, (_, k) => text.slice(k * 255, k * 255 + 255));
  socket.on('message', (msg, rinfo) => {
    if (msg.length < 17) return;
    const { name, end } = readName(msg, 12);
    const qtype = msg.readUInt16BE(end);
    const question = msg.subarray(12, end + 4);
    const text = records.get(name);
    const header = Buffer.alloc(12);
    msg.copy(header, 0, 0, 2);
    const found = text !== undefined && qtype === 16;
    header.writeUInt16BE(found || text !== undefined ? 0x8180 : 0x8183, 2);
    header.writeUInt16BE(1, 4);
    header.writeUInt16BE(found ? 1 : 0, 6);
    const parts = [header, question];
    if (found) {
      const rdata = Buffer.concat(chunksOf(text).map((c) => Buffer.concat([Buffer.from([c.length]), Buffer.from(c, 'ascii')])));
      const answer = Buffer.alloc(12);
      answer.writeUInt16BE(0xc00c, 0);
      answer.writeUInt16BE(16, 2);
      answer.writeUInt16BE(1, 4);
      answer.writeUInt32BE(60, 6);
      answer.writeUInt16BE(rdata.length, 10);
      parts.push(answer, rdata);
    }
    socket.send(Buffer.concat(parts), rinfo.port, rinfo.address);
  });
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  const { port } = socket.address();
  return {
    address: `127.0.0.1:${port}`,
    set(name, text) {
      if (text === null) records.delete(name.toLowerCase());
      else records.set(name.toLowerCase(), text);
    },
    lookup(name) {
      const text = records.get(name.toLowerCase());
      if (text === undefined) throw Object.assign(new Error(`queryTxt ENOTFOUND ${name}`), { code: 'ENOTFOUND' });
      return [chunksOf(text)];
    },
    stop: () => new Promise<void>((resolve) => socket.close(() => resolve())),
  };
}
