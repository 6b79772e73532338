// An events.out.tfevents.* reader written apart from the writer (src/io/tfevents.ts): its own
// CRC32C (bit by bit, no table), its own TFRecord framing checks and a hand-written protobuf
// wire-format decoder for tensorflow.Event (field numbers from TensorFlow's event.proto and
// summary.proto), so a test that reads what the writer wrote checks the bytes, not the library.

export interface ReadEvent {
  wallTime: number;
  step: number;
  fileVersion?: string;
  /** Summary.Value simple_value by tag. */
  scalars: Record<string, number>;
  /** SessionLog.status (1 = START). */
  sessionStatus?: number;
}

/** CRC-32C (Castagnoli): reflected, polynomial 0x82F63B78, init and final xor 0xFFFFFFFF. */
export function crc32cBitwise(bytes: Uint8Array): number {
  let crc = ~0 >>> 0;
  for (const b of bytes) {
    crc = (crc ^ b) >>> 0;
    for (let i = 0; i < 8; i++) crc = (crc & 1) ? ((crc >>> 1) ^ 0x82f63b78) >>> 0 : crc >>> 1;
  }
  return (~crc) >>> 0;
}

/** TensorFlow's mask: ((crc >> 15) | (crc << 17)) + 0xa282ead8, in 32 bits. */
export function mask(crc: number): number {
  const rot = ((crc >>> 15) | ((crc << 17) >>> 0)) >>> 0;
  return Number((BigInt(rot) + 0xa282ead8n) & 0xffffffffn);
}

/** The records of a TFRecord file; throws on a bad length or data CRC or a cut record. */
export function tfRecords(file: Uint8Array): Uint8Array[] {
  const out: Uint8Array[] = [];
  const dv = new DataView(file.buffer, file.byteOffset, file.byteLength);
  let p = 0;
  while (p < file.length) {
    if (p + 12 > file.length) throw new Error(`record header cut at byte ${p}`);
    const len = Number(dv.getBigUint64(p, true));
    if (dv.getUint32(p + 8, true) !== mask(crc32cBitwise(file.subarray(p, p + 8)))) {
      throw new Error(`bad length crc at byte ${p}`);
    }
    const data = file.subarray(p + 12, p + 12 + len);
    if (data.length !== len || p + 16 + len > file.length) {
      throw new Error(`record cut at byte ${p}`);
    }
    if (dv.getUint32(p + 12 + len, true) !== mask(crc32cBitwise(data))) {
      throw new Error(`bad data crc at byte ${p}`);
    }
    out.push(data);
    p += 16 + len;
  }
  return out;
}

type Field = {
  no: number;
  wire: number;
  varint?: bigint;
  fixed64?: DataView;
  fixed32?: DataView;
  bytes?: Uint8Array;
};

function fields(buf: Uint8Array): Field[] {
  const out: Field[] = [];
  let p = 0;
  const varint = (): bigint => {
    let v = 0n, shift = 0n;
    for (;;) {
      const b = buf[p++];
      if (b === undefined) throw new Error("varint runs past the message");
      v |= BigInt(b & 0x7f) << shift;
      if (!(b & 0x80)) return v;
      shift += 7n;
    }
  };
  const view = (n: number) => {
    if (p + n > buf.length) throw new Error("fixed field runs past the message");
    const d = new DataView(buf.buffer, buf.byteOffset + p, n);
    p += n;
    return d;
  };
  while (p < buf.length) {
    const key = Number(varint());
    const no = key >>> 3, wire = key & 7;
    if (wire === 0) out.push({ no, wire, varint: varint() });
    else if (wire === 1) out.push({ no, wire, fixed64: view(8) });
    else if (wire === 5) out.push({ no, wire, fixed32: view(4) });
    else if (wire === 2) {
      const n = Number(varint());
      if (p + n > buf.length) throw new Error("length-delimited field runs past the message");
      out.push({ no, wire, bytes: buf.subarray(p, p + n) });
      p += n;
    } else throw new Error(`unsupported wire type ${wire}`);
  }
  return out;
}

const utf8 = new TextDecoder("utf-8", { fatal: true });

/** tensorflow.Event: wall_time 1 (double), step 2 (int64), file_version 3, summary 5, session_log 6. */
export function decodeEvent(buf: Uint8Array): ReadEvent {
  const e: ReadEvent = { wallTime: NaN, step: 0, scalars: {} };
  for (const f of fields(buf)) {
    if (f.no === 1 && f.wire === 1) e.wallTime = f.fixed64!.getFloat64(0, true);
    else if (f.no === 2 && f.wire === 0) e.step = Number(BigInt.asIntN(64, f.varint!));
    else if (f.no === 3 && f.wire === 2) e.fileVersion = utf8.decode(f.bytes);
    else if (f.no === 5 && f.wire === 2) {
      // Summary: repeated Value value = 1; Value: tag = 1, simple_value = 2 (float).
      for (const v of fields(f.bytes!)) {
        if (v.no !== 1 || v.wire !== 2) continue;
        let tag = "", value: number | undefined;
        for (const x of fields(v.bytes!)) {
          if (x.no === 1 && x.wire === 2) tag = utf8.decode(x.bytes);
          else if (x.no === 2 && x.wire === 5) value = x.fixed32!.getFloat32(0, true);
        }
        if (value !== undefined) e.scalars[tag] = value;
      }
    } else if (f.no === 6 && f.wire === 2) {
      for (const x of fields(f.bytes!)) {
        if (x.no === 1 && x.wire === 0) e.sessionStatus = Number(x.varint);
      }
    }
  }
  return e;
}

/** Every event of an events file. */
export function readEventsFile(bytes: Uint8Array): ReadEvent[] {
  return tfRecords(bytes).map(decodeEvent);
}
