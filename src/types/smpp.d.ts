/**
 * The parts of `smpp` (0.5, node-smpp; it ships no types) that Herald uses: sessions as a client
 * (the SMPP adapter) and as a server (the tests' fake SMSC). A PDU's fields are named as in the
 * SMPP specification; the library decodes `short_message` into `{ udh?, message }` by its
 * `data_coding`, and encodes a string or a `{ udh, message }` the same way.
 */
declare module 'smpp' {
  import type { EventEmitter } from 'node:events';
  import type { Server as NetServer, Socket } from 'node:net';

  namespace smpp {
    /** A decoded `short_message` or `message_payload`: its user data header's elements, then its text (or bytes, for an encoding the library does not know). */
    interface DecodedMessage {
      udh?: Buffer[];
      message: string | Buffer;
    }

    /** What is encoded as `short_message`: bytes as they are, or a text (with a header) encoded by `data_coding`. */
    type OutgoingMessage = Buffer | string | { udh?: Buffer; message: string | Buffer };

    type PduCallback = (pdu: PDU) => void;

    class PDU {
      constructor(command: string, options?: Record<string, unknown>);
      command: string;
      command_id: number;
      command_status: number;
      sequence_number: number;
      system_id?: string;
      password?: string;
      system_type?: string;
      interface_version?: number;
      service_type?: string;
      source_addr_ton?: number;
      source_addr_npi?: number;
      source_addr?: string;
      dest_addr_ton?: number;
      dest_addr_npi?: number;
      destination_addr?: string;
      esm_class?: number;
      registered_delivery?: number;
      data_coding?: number | null;
      short_message?: DecodedMessage | Buffer;
      message_payload?: DecodedMessage | Buffer;
      message_id?: string;
      receipted_message_id?: string;
      message_state?: number;
      isResponse(): boolean;
      /** The response to this request (`<command>_resp`, same sequence number); a non-zero `command_status` sends the header alone. */
      response(options?: Record<string, unknown>): PDU;
      toBuffer(): Buffer;
    }

    class Session extends EventEmitter {
      socket: Socket;
      /** Writes a PDU; a request gets the next sequence number. False when the socket is no longer writable. */
      send(pdu: PDU, responseCallback?: PduCallback, sendCallback?: PduCallback): boolean;
      bind_transceiver(options: Record<string, unknown>, responseCallback?: PduCallback): boolean;
      submit_sm(options: Record<string, unknown>, responseCallback?: PduCallback): boolean;
      deliver_sm(options: Record<string, unknown>, responseCallback?: PduCallback): boolean;
      enquire_link(responseCallback?: PduCallback): boolean;
      enquire_link(options: Record<string, unknown>, responseCallback?: PduCallback): boolean;
      unbind(responseCallback?: PduCallback): boolean;
      /** Ends the socket (after what is written). */
      close(callback?: () => void): void;
      destroy(callback?: () => void): void;
      pause(): void;
      resume(): void;
    }

    class Server extends NetServer {
      /** The sessions whose sockets are open. */
      sessions: Session[];
    }

    interface ConnectOptions {
      host?: string;
      port?: number;
      url?: string;
      tls?: boolean;
      auto_enquire_link_period?: number;
    }

    interface Encoding {
      match(text: string): boolean;
      encode(text: string): Buffer;
      decode(bytes: Buffer): string;
    }

    function connect(options: ConnectOptions, listener?: () => void): Session;
    function createServer(listener?: (session: Session) => void): Server;

    /** Command status names (`ESME_RTHROTTLED`) to their values. */
    const errors: Readonly<Record<string, number>>;
    /** `ASCII` is the GSM 03.38 default alphabet, one septet per octet (unpacked), despite its name. */
    const encodings: { readonly ASCII: Encoding; readonly LATIN1: Encoding; readonly UCS2: Encoding; default: string };
    /** GSM 03.38's default alphabet (by position) and the characters its extension table adds. */
    const gsmCoder: { readonly GSM: { readonly chars: string; readonly extChars: string } };
  }

  export = smpp;
}
