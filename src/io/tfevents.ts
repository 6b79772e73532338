// TensorBoard event files (events.out.tfevents.*): TFRecord framing (length, masked CRC32C of the
// length, data, masked CRC32C of the data) around tensorflow.Event protobufs, encoded with
// protobufjs from a JSON descriptor of the messages TensorBoard's scalar dashboard reads
// (tensorflow/core/util/event.proto, tensorflow/core/framework/summary.proto: the fields used
// here keep their upstream numbers). Host-neutral: it makes bytes; RunDir appends them to a file.

import protobuf from "protobufjs/light.js";

/** The subset of event.proto / summary.proto a scalar log needs, field numbers as upstream. */
const PROTO: protobuf.INamespace = {
  nested: {
    tensorflow: {
      nested: {
        Event: {
          fields: {
            wallTime: { type: "double", id: 1 },
            step: { type: "int64", id: 2 },
            fileVersion: { type: "string", id: 3 },
            summary: { type: "Summary", id: 5 },
            sessionLog: { type: "SessionLog", id: 6 },
          },
        },
        Summary: {
          fields: { value: { rule: "repeated", type: "Value", id: 1 } },
          nested: {
            Value: {
              fields: {
                tag: { type: "string", id: 1 },
                simpleValue: { type: "float", id: 2 },
              },
            },
          },
        },
        SessionLog: {
          fields: {
            status: { type: "SessionStatus", id: 1 },
            checkpointPath: { type: "string", id: 2 },
            msg: { type: "string", id: 3 },
          },
          nested: {
            SessionStatus: { values: { STATUS_UNSPECIFIED: 0, START: 1, STOP: 2, CHECKPOINT: 3 } },
          },
        },
      },
    },
  },
};

const root = protobuf.Root.fromJSON(PROTO);
const EventType = root.lookupType("tensorflow.Event");

// ---- CRC32C (Castagnoli, reflected polynomial 0x82F63B78) and TFRecord's mask -----------------

const CRC32C_TABLE = (() => {
  const t = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0x82f63b78 : c >>> 1;
    t[n] = c >>> 0;
  }
  return t;
})();

export function crc32c(bytes: Uint8Array): number {
  let c = 0xffffffff;
  for (let i = 0; i < bytes.length; i++) c = CRC32C_TABLE[(c ^ bytes[i]) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

/** TFRecord's masked CRC: rotate right by 15 and add 0xa282ead8 (mod 2^32). */
export function maskedCrc32c(bytes: Uint8Array): number {
  const c = crc32c(bytes);
  return ((((c >>> 15) | (c << 17)) >>> 0) + 0xa282ead8) >>> 0;
}

/** One TFRecord: uint64 length, masked crc of those 8 bytes, the data, masked crc of the data (little-endian). */
export function tfRecord(data: Uint8Array): Uint8Array {
  const out = new Uint8Array(8 + 4 + data.length + 4);
  const view = new DataView(out.buffer);
  view.setBigUint64(0, BigInt(data.length), true);
  view.setUint32(8, maskedCrc32c(out.subarray(0, 8)), true);
  out.set(data, 12);
  view.setUint32(12 + data.length, maskedCrc32c(data), true);
  return out;
}

// ---- events -------------------------------------------------------------------------------

export interface TfEvent {
  /** Seconds since the epoch. */
  wallTime: number;
  step?: number;
  fileVersion?: string;
  /** Scalars by tag. */
  scalars?: Readonly<Record<string, number>>;
  /** A SessionLog START at `step`: TensorBoard drops what an earlier session logged at steps ≥ it (a resume). */
  sessionStart?: boolean;
}

/** An Event message, protobuf-encoded (without framing). */
export function encodeEvent(e: TfEvent): Uint8Array {
  const msg: Record<string, unknown> = { wallTime: e.wallTime };
  if (e.step !== undefined) msg.step = e.step;
  if (e.fileVersion !== undefined) msg.fileVersion = e.fileVersion;
  if (e.scalars) {
    msg.summary = {
      value: Object.entries(e.scalars).map(([tag, simpleValue]) => ({ tag, simpleValue })),
    };
  }
  if (e.sessionStart) msg.sessionLog = { status: 1 };
  return EventType.encode(EventType.fromObject(msg)).finish();
}

/** An Event in its TFRecord frame, ready to append to an events file. */
export function eventRecord(e: TfEvent): Uint8Array {
  return tfRecord(encodeEvent(e));
}

/** The first record of every events file: TensorBoard reads only files that start with it. */
export function fileVersionRecord(wallTime: number): Uint8Array {
  return eventRecord({ wallTime, fileVersion: "brain.Event:2" });
}

/** TensorFlow's file name: events.out.tfevents.<unix seconds, 10 digits>.<host>.<pid>.<counter>. */
export function eventsFileName(wallTime: number, host: string, pid: number, counter = 0): string {
  return `events.out.tfevents.${
    String(Math.floor(wallTime)).padStart(10, "0")
  }.${host}.${pid}.${counter}`;
}
